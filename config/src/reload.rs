//! Reloading: a daemon keeps running on its previous configuration when the new one is broken,
//! and can say why.
use crate::config::Config;
use crate::error::ConfigError;
use crate::load::LoadOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The configuration a daemon runs on, with the file it came from.
#[derive(Debug, Clone)]
pub struct ConfigHandle {
    current: Arc<Config>,
    path: PathBuf,
    opts: LoadOptions,
    last_error: Option<ConfigError>,
}

impl ConfigHandle {
    /// Loads the configuration a daemon starts with (an error here is fatal: there is nothing
    /// to fall back to).
    pub fn load(path: impl AsRef<Path>, opts: LoadOptions) -> Result<Self, ConfigError> {
        let current = Arc::new(Config::load(path.as_ref(), &opts)?);
        Ok(ConfigHandle {
            current,
            path: path.as_ref().to_path_buf(),
            opts,
            last_error: None,
        })
    }

    /// The configuration in force.
    pub fn current(&self) -> Arc<Config> {
        Arc::clone(&self.current)
    }

    /// The file it is read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file again. On success the new configuration is in force and returned; on
    /// failure the previous one stays in force and the error (file, line, knob) is returned and
    /// kept in [`ConfigHandle::last_error`].
    pub fn reload(&mut self) -> Result<Arc<Config>, ConfigError> {
        match Config::load(&self.path, &self.opts) {
            Ok(c) => {
                self.current = Arc::new(c);
                self.last_error = None;
                Ok(self.current())
            }
            Err(e) => {
                self.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Why the last reload failed, if it did.
    pub fn last_error(&self) -> Option<&ConfigError> {
        self.last_error.as_ref()
    }
}
