//! The files of a job: `initialdir`, `executable`, `input`/`output`/`error`, the executable's
//! size, and file transfer (submit_utils.cpp `SetIWD`, `SetExecutable`, `SetStdin`/`SetStdout`/
//! `SetStderr`, `SetImageSize`, `SetTransferFiles`).
use super::{full_path, literal_int, ShouldTransfer, B};
use crate::error::{At, SubmitError};
use crate::units::parse_bytes;
use std::path::{Path, PathBuf};

/// One of the standard files: its commands and attributes.
#[derive(Clone, Copy)]
pub(super) struct StdFile {
    key: &'static str,
    alt: &'static str,
    attr: &'static str,
    transfer_key: &'static str,
    transfer_attr: &'static str,
    stream_key: &'static str,
    stream_attr: &'static str,
}

pub(super) const STD_FILES: &[StdFile] = &[
    StdFile {
        key: "input",
        alt: "stdin",
        attr: "In",
        transfer_key: "transfer_input",
        transfer_attr: "TransferIn",
        stream_key: "stream_input",
        stream_attr: "StreamIn",
    },
    StdFile {
        key: "output",
        alt: "stdout",
        attr: "Out",
        transfer_key: "transfer_output",
        transfer_attr: "TransferOut",
        stream_key: "stream_output",
        stream_attr: "StreamOut",
    },
    StdFile {
        key: "error",
        alt: "stderr",
        attr: "Err",
        transfer_key: "transfer_error",
        transfer_attr: "TransferErr",
        stream_key: "stream_error",
        stream_attr: "StreamErr",
    },
];

impl B<'_> {
    pub(super) fn iwd(&mut self) -> Result<(), SubmitError> {
        let given = match self.param("initialdir", Some("Iwd"))? {
            Some(v) => Some(v),
            None => self.param("initial_dir", Some("job_iwd"))?,
        };
        let cwd = &self.j.who.cwd;
        let iwd = match &given {
            Some((d, _)) => full_path(cwd, d),
            None => full_path(Path::new("/"), &cwd.display().to_string()),
        };
        let iwd = if iwd.len() > 1 {
            iwd.trim_end_matches('/').to_string()
        } else {
            iwd
        };
        if !self.j.host.is_dir(Path::new(&iwd)) {
            let at = given.map(|(_, at)| at).unwrap_or_default();
            return Err(self.err(&at, format!("No such directory: {iwd}")));
        }
        self.string("Iwd", &iwd);
        self.string("JobSubmitFile", &self.j.who.submit_file.clone());
        self.iwd = PathBuf::from(iwd);
        Ok(())
    }

    pub(super) fn executable(&mut self) -> Result<(), SubmitError> {
        let Some((exe, at)) = self.param("executable", Some("Cmd"))? else {
            if self.has("Cmd") {
                return Ok(());
            }
            return Err(self.err(&At::default(), "No 'executable' parameter was provided"));
        };
        let mut transfer = true;
        if let Some((v, _)) = self.param("transfer_executable", Some("TransferExecutable"))? {
            if v.starts_with(['F', 'f']) {
                self.ad.insert_bool("TransferExecutable", false);
                transfer = false;
            }
        }
        let full = if transfer {
            full_path(&self.j.who.cwd, &exe)
        } else {
            exe.clone()
        };
        if transfer && !self.j.host.exists(Path::new(&full)) {
            return Err(self.err(&at, format!("Executable file {full} does not exist")));
        }
        self.string("Cmd", &full);
        Ok(())
    }

    /// `input`/`output`/`error` (`SetStdin`, `SetStdout`, `SetStderr`).
    pub(super) fn std_file(&mut self, f: &StdFile) -> Result<(), SubmitError> {
        let StdFile {
            key,
            alt,
            attr,
            transfer_key,
            transfer_attr,
            stream_key,
            stream_attr,
        } = *f;
        let mut transfer = self.bool_attr(transfer_attr).unwrap_or(true);
        let (t, _) = self.param_bool(transfer_key, Some(transfer_attr), transfer)?;
        let must_set = t != transfer;
        transfer = t;
        let stream_default = self.bool_attr(stream_attr).unwrap_or(false);
        let (stream, _) = self.param_bool(stream_key, Some(stream_attr), stream_default)?;
        let value = self.param(key, Some(alt))?;
        if value.is_some() || !self.has(attr) {
            let file = match &value {
                None => {
                    transfer = false;
                    "/dev/null".to_string()
                }
                Some((v, _)) if v == "/dev/null" => {
                    transfer = false;
                    v.clone()
                }
                Some((v, _)) => v.clone(),
            };
            self.string(attr, &file);
        }
        if transfer {
            self.ad.insert_bool(stream_attr, stream);
            if must_set {
                self.ad.insert_bool(transfer_attr, true);
            }
        } else {
            self.ad.insert_bool(transfer_attr, false);
        }
        Ok(())
    }

    pub(super) fn image_size(&mut self) -> Result<(), SubmitError> {
        if self.j.proc_id < 1 {
            let cmd = self.string_attr("Cmd").unwrap_or_default();
            let kb = if cmd.is_empty() {
                0
            } else {
                self.size_kb(&cmd)
            };
            self.int("ExecutableSize", kb);
        }
        match self.param("image_size", Some("ImageSize"))? {
            Some((v, at)) => {
                let kb = parse_bytes(&v, 1024).unwrap_or(0);
                if kb < 1 {
                    return Err(self.err(
                        &at,
                        format!("'{v}' is not valid for Image Size: it must be positive"),
                    ));
                }
                self.int("ImageSize", kb);
            }
            None if !self.has("ImageSize") => {
                let exe = literal_int(self.ad.lookup("ExecutableSize")).unwrap_or(0);
                self.int("ImageSize", exe);
            }
            None => {}
        }
        Ok(())
    }

    /// `transfer_input_files`, `transfer_output_files`, `should_transfer_files`,
    /// `when_to_transfer_output` (`SetTransferFiles`).
    pub(super) fn transfer(&mut self) -> Result<ShouldTransfer, SubmitError> {
        let split = |v: &str| -> Vec<String> {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        };
        let mut input_kb = 0i64;
        let inputs = self.param("transfer_input_files", Some("TransferInputFiles"))?;
        let input_list = match &inputs {
            Some((v, _)) if v != "\"\"" => split(v),
            _ => Vec::new(),
        };
        for f in &input_list {
            if !f.contains("://") {
                input_kb += self.size_kb(&full_path(&self.iwd, f));
            }
        }
        if self.bool_attr("TransferIn").unwrap_or(true) {
            if let Some(stdin) = self.string_attr("In") {
                if !stdin.is_empty() {
                    input_kb += self.size_kb(&full_path(&self.iwd, &stdin));
                }
            }
        }
        let outputs = self.param("transfer_output_files", Some("TransferOutputFiles"))?;
        let (out_specified, output_list) = match &outputs {
            Some((v, _)) if v == "\"\"" => (true, Vec::new()),
            Some((v, _)) => {
                let l = split(v);
                (!l.is_empty(), l)
            }
            None => (false, Vec::new()),
        };
        let should_given = match self.param("should_transfer_files", Some("ShouldTransferFiles"))? {
            Some(v) => Some(v),
            None => self
                .string_attr("ShouldTransferFiles")
                .map(|s| (s, At::default())),
        };
        let default_should = should_given.is_none();
        let (should_text, should_at) = should_given
            .clone()
            .unwrap_or(("IF_NEEDED".into(), At::default()));
        let mut should = match should_text.to_ascii_uppercase().as_str() {
            "YES" | "TRUE" | "ALWAYS" => ShouldTransfer::Yes,
            "NO" | "FALSE" | "NEVER" => ShouldTransfer::No,
            "IF_NEEDED" => ShouldTransfer::IfNeeded,
            _ => {
                return Err(self.err(
                    &should_at,
                    format!("invalid value ({should_text}) for ShouldTransferFiles.  Please either specify YES, NO, or IF_NEEDED and try again."),
                ))
            }
        };
        if should == ShouldTransfer::No && (!input_list.is_empty() || out_specified) {
            let which = match (!input_list.is_empty(), out_specified) {
                (true, true) => "\"transfer_input_files\" and \"transfer_output_files\"",
                (true, false) => "\"transfer_input_files\"",
                _ => "\"transfer_output_files\"",
            };
            return Err(self.err(&should_at, format!("you specified files you want Condor to transfer via {which}, but you disabled should_transfer_files.")));
        }
        let when_given =
            match self.param("when_to_transfer_output", Some("WhenToTransferOutput"))? {
                Some(v) => Some(v),
                None => self
                    .string_attr("WhenToTransferOutput")
                    .map(|s| (s, At::default())),
            };
        #[derive(PartialEq)]
        enum When {
            OnExit,
            OnExitOrEvict,
            OnSuccess,
            Never,
        }
        let (mut when, when_text, when_at) = match &when_given {
            None => (When::OnExit, "ON_EXIT".to_string(), At::default()),
            Some((w, at)) => {
                let when = match w.to_ascii_uppercase().as_str() {
                    "ON_EXIT" => When::OnExit,
                    "ON_EXIT_OR_EVICT" => When::OnExitOrEvict,
                    "ON_SUCCESS" => When::OnSuccess,
                    "NEVER" => When::Never,
                    _ => {
                        return Err(self.err(
                            at,
                            format!("invalid value ({w}) for WhenToTransferOutput.  Please either specify ON_EXIT, or ON_EXIT_OR_EVICT and try again."),
                        ))
                    }
                };
                (when, w.clone(), at.clone())
            }
        };
        if !default_should && when_given.is_none() && should == ShouldTransfer::No {
            when = When::Never;
        }
        if (should == ShouldTransfer::No) != (when == When::Never) {
            return Err(self.err(
                &when_at,
                format!("WhenToTransferOutput specified as {when_text} yet ShouldTransferFiles defined as {should_text}.  Please remove this contradiction from your submit file and try again."),
            ));
        }
        if default_should && when == When::OnExitOrEvict && should == ShouldTransfer::IfNeeded {
            should = ShouldTransfer::Yes;
        }
        if when == When::OnExitOrEvict && should == ShouldTransfer::IfNeeded {
            return Err(self.err(&when_at, "\"when_to_transfer_output = ON_EXIT_OR_EVICT\" and \"should_transfer_files = IF_NEEDED\" are incompatible."));
        }
        self.string(
            "ShouldTransferFiles",
            match should {
                ShouldTransfer::Yes => "YES",
                ShouldTransfer::No => "NO",
                ShouldTransfer::IfNeeded => "IF_NEEDED",
            },
        );
        if should != ShouldTransfer::No {
            self.string(
                "WhenToTransferOutput",
                match when {
                    When::OnExit => "ON_EXIT",
                    When::OnExitOrEvict => "ON_EXIT_OR_EVICT",
                    When::OnSuccess => "ON_SUCCESS",
                    When::Never => "NEVER",
                },
            );
        }
        if should != ShouldTransfer::Yes
            && !self.has("FileSystemDomain")
            && !self.j.settings.filesystem_domain.is_empty()
        {
            self.string(
                "FileSystemDomain",
                &self.j.settings.filesystem_domain.clone(),
            );
        }
        match self.param("disk_usage", Some("DiskUsage"))? {
            Some((v, at)) => {
                let kb = parse_bytes(&v, 1024).filter(|k| *k >= 1).ok_or_else(|| {
                    self.err(
                        &at,
                        format!("'{v}' is not valid for disk_usage. It must be >= 1"),
                    )
                })?;
                self.int("DiskUsage", kb);
            }
            None => {
                let exe = literal_int(self.ad.lookup("ExecutableSize")).unwrap_or(0);
                self.int("TransferInputSizeMB", (exe + input_kb) / 1024);
                self.int("DiskUsage", exe + input_kb);
            }
        }
        if should != ShouldTransfer::No {
            if !input_list.is_empty() {
                self.string("TransferInput", &input_list.join(","));
            }
            if out_specified {
                self.string("TransferOutput", &output_list.join(","));
            }
        }
        if should == ShouldTransfer::No
            && self
                .param_bool("transfer_executable", Some("TransferExecutable"), false)?
                .0
        {
            return Err(self.err(&At::default(), "You explicitly requested that the executable be transfered, but for this to work, you must enable Condor's file transfer functionality."));
        }
        if let Some((v, at)) = self.param("transfer_output_remaps", Some("TransferOutputRemaps"))? {
            let inner = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .filter(|_| v.len() >= 2);
            let inner = inner.ok_or_else(|| {
                self.err(
                    &at,
                    format!("transfer_output_remaps must be a quoted string, not: {v}"),
                )
            })?;
            self.string("TransferOutputRemaps", inner);
        }
        Ok(should)
    }
}
