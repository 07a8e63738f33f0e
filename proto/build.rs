//! Generates the gRPC code from `proto/*.proto` with a vendored `protoc`, so building needs no
//! system protobuf compiler.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    let files = [
        "proto/raft.proto",
        "proto/admin.proto",
        "proto/collector.proto",
        "proto/negotiation.proto",
        "proto/execute.proto",
        "proto/schedd.proto",
    ];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    tonic_build::configure().compile_protos(&files, &["proto"])?;
    Ok(())
}
