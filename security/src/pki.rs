//! The pool's certificate authority and the certificates it issues.
//!
//! `aerie-cm security init DIR` makes a CA (`ca.crt`, `ca.key`) and one certificate per
//! daemon or admin (`NAME.crt`, `NAME.key`); `aerie-cm security issue DIR NAME ROLES` adds or
//! renews one later with the same CA. Keys are ECDSA P-256 (rcgen's default), written
//! readable by their owner only. Each certificate carries, per role, the DNS name
//! `<role>.aerie` and the URI `aerie://<role>/<name>` ([`crate::identity`]), both extended key
//! usages (every daemon is a server to some peers and a client to others), and a validity of
//! `days` from now. Rotation: issue a new certificate (same name) and restart or reconfigure
//! the daemon; a new CA needs every certificate reissued (see README "Security").
use crate::identity::Role;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The CA certificate's file name in a credentials directory.
pub const CA_CERT: &str = "ca.crt";
/// The CA key's file name (keep it off daemons that do not issue certificates).
pub const CA_KEY: &str = "ca.key";

/// A PKI failure, naming the file or the holder.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// Reading or writing a file failed.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// A name or role is unusable.
    #[error("{0}")]
    Invalid(String),
    /// rcgen could not make or read a key or certificate.
    #[error("{what}: {error}")]
    Crypto {
        /// What was being made or read.
        what: String,
        /// rcgen's error.
        error: rcgen::Error,
    },
}

/// One certificate to issue: its holder's name and roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The holder's name (file names and principals): letters, digits, `-`, `_`, `.`.
    pub name: String,
    /// Its roles.
    pub roles: Vec<Role>,
}

impl Holder {
    /// Parses `NAME=ROLE[+ROLE...]` (`cm1=cm`, `node1=execute+access-point`).
    pub fn parse(s: &str) -> Result<Holder, PkiError> {
        let (name, roles) = s.split_once('=').ok_or_else(|| {
            PkiError::Invalid(format!("{s:?} is not NAME=ROLE[+ROLE...] (e.g. cm1=cm)"))
        })?;
        let roles = roles
            .split('+')
            .map(|r| {
                Role::parse(r.trim()).ok_or_else(|| {
                    PkiError::Invalid(format!(
                        "{s:?}: unknown role {r:?} (roles: cm, execute, access-point, admin)"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let h = Holder {
            name: name.trim().to_string(),
            roles,
        };
        h.check()?;
        Ok(h)
    }

    fn check(&self) -> Result<(), PkiError> {
        let ok = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !self.name.starts_with('.');
        if !ok {
            return Err(PkiError::Invalid(format!(
                "holder name {:?}: use letters, digits, '-', '_' and '.' only",
                self.name
            )));
        }
        if self.name == "ca" {
            return Err(PkiError::Invalid(
                "holder name \"ca\" is the CA's own file name".into(),
            ));
        }
        if self.roles.is_empty() {
            return Err(PkiError::Invalid(format!("{}: no role", self.name)));
        }
        Ok(())
    }
}

fn crypto(what: impl Into<String>) -> impl FnOnce(rcgen::Error) -> PkiError {
    let what = what.into();
    move |error| PkiError::Crypto { what, error }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PkiError + '_ {
    move |error| PkiError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Writes `text` to `path`, creating it with `mode` (keys 0600) and replacing it atomically.
fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), PkiError> {
    let tmp = path.with_extension("tmp");
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io(&tmp))?;
    f.write_all(text.as_bytes()).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    fs::rename(&tmp, path).map_err(io(path))
}

fn validity(params: &mut CertificateParams, days: u32) {
    let now = time::OffsetDateTime::now_utc();
    // A little slack for clocks that disagree between hosts.
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(i64::from(days));
}

/// Creates the pool CA in `dir` (which must not hold one yet) valid for `days`.
pub fn create_ca(dir: &Path, pool: &str, days: u32) -> Result<(), PkiError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let key_path = dir.join(CA_KEY);
    if key_path.exists() {
        return Err(PkiError::Invalid(format!(
            "{} exists: this directory already has a pool CA (use `issue` to add certificates)",
            key_path.display()
        )));
    }
    let key = KeyPair::generate().map_err(crypto("CA key"))?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, format!("Aerie pool CA ({pool})"));
    dn.push(DnType::OrganizationName, "Aerie");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    validity(&mut params, days);
    let cert = params.self_signed(&key).map_err(crypto("CA certificate"))?;
    write_file(&key_path, &key.serialize_pem(), 0o600)?;
    write_file(&dir.join(CA_CERT), &cert.pem(), 0o644)
}

/// Issues (or renews) `holder`'s certificate in `dir` with the CA there, valid for `days`.
pub fn issue(dir: &Path, holder: &Holder, days: u32) -> Result<(), PkiError> {
    holder.check()?;
    let ca_key_path = dir.join(CA_KEY);
    let ca_cert_path = dir.join(CA_CERT);
    let ca_key_pem = fs::read_to_string(&ca_key_path).map_err(io(&ca_key_path))?;
    let ca_cert_pem = fs::read_to_string(&ca_cert_path).map_err(io(&ca_cert_path))?;
    let ca_key = KeyPair::from_pem(&ca_key_pem)
        .map_err(crypto(format!("reading {}", ca_key_path.display())))?;
    let ca_params = CertificateParams::from_ca_cert_pem(&ca_cert_pem)
        .map_err(crypto(format!("reading {}", ca_cert_path.display())))?;
    // Re-signing the CA's own parameters gives rcgen the issuer name and key it needs; the
    // original ca.crt stays the trust anchor.
    let ca = ca_params
        .self_signed(&ca_key)
        .map_err(crypto("loading the CA"))?;

    let key = KeyPair::generate().map_err(crypto(format!("{}'s key", holder.name)))?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, holder.name.clone());
    dn.push(DnType::OrganizationName, "Aerie");
    params.distinguished_name = dn;
    for role in &holder.roles {
        let dns = role
            .server_name()
            .try_into()
            .map_err(crypto("role DNS name"))?;
        params.subject_alt_names.push(SanType::DnsName(dns));
        let uri = format!("aerie://{}/{}", role.as_str(), holder.name)
            .try_into()
            .map_err(crypto("identity URI"))?;
        params.subject_alt_names.push(SanType::URI(uri));
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params, days);
    let cert = params
        .signed_by(&key, &ca, &ca_key)
        .map_err(crypto(format!("{}'s certificate", holder.name)))?;
    write_file(
        &dir.join(format!("{}.key", holder.name)),
        &key.serialize_pem(),
        0o600,
    )?;
    write_file(
        &dir.join(format!("{}.crt", holder.name)),
        &cert.pem(),
        0o644,
    )
}

/// `aerie-cm security init`: a new CA in `dir` and a certificate for every holder.
pub fn init(dir: &Path, pool: &str, holders: &[Holder], days: u32) -> Result<(), PkiError> {
    create_ca(dir, pool, days)?;
    crate::token::SigningKey::create(dir, pool).map_err(PkiError::Invalid)?;
    for h in holders {
        issue(dir, h, days)?;
    }
    Ok(())
}

/// The holders of a local development pool of `cms` CMs: `cm1..cmN`, an `admin`, and the
/// `nodes` given (`exec1=execute`, ...).
pub fn default_holders(cms: u32, nodes: &[Holder]) -> Vec<Holder> {
    let mut out: Vec<Holder> = (1..=cms)
        .map(|i| Holder {
            name: format!("cm{i}"),
            roles: vec![Role::Cm],
        })
        .collect();
    out.push(Holder {
        name: "admin".into(),
        roles: vec![Role::Admin],
    });
    out.extend(nodes.iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Identity;

    #[test]
    fn issued_certificates_carry_name_and_roles() {
        let dir = tempfile::tempdir().unwrap();
        let h = Holder::parse("node1=execute+access-point").unwrap();
        init(dir.path(), "test", &[h], 30).unwrap();
        let pem = fs::read_to_string(dir.path().join("node1.crt")).unwrap();
        let der = x509_parser::pem::parse_x509_pem(pem.as_bytes())
            .unwrap()
            .1
            .contents;
        let id = Identity::from_der(&der).unwrap();
        assert_eq!(id.name, "node1");
        assert_eq!(id.roles, vec![Role::Execute, Role::AccessPoint]);
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.path().join("node1.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "keys are private to their owner");
    }

    #[test]
    fn init_refuses_to_overwrite_a_ca_and_bad_holders() {
        let dir = tempfile::tempdir().unwrap();
        init(dir.path(), "test", &[], 1).unwrap();
        let e = init(dir.path(), "test", &[], 1).unwrap_err().to_string();
        assert!(e.contains("already has a pool CA"), "{e}");
        for bad in ["cm1", "cm1=", "cm1=root", "../x=cm", "ca=cm", "=cm"] {
            assert!(Holder::parse(bad).is_err(), "{bad} accepted");
        }
    }
}
