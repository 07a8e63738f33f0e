//! `arguments` and `environment` (submit_utils.cpp `SetArguments`, `SetEnvironment`; the
//! syntaxes are in [`crate::args`]).
use super::{parse_bool, B};
use crate::args::{self, Arguments, Environment};
use crate::error::SubmitError;

impl B<'_> {
    pub(super) fn arguments(&mut self) -> Result<(), SubmitError> {
        let a1 = self.param("arguments", Some("Args"))?;
        let a2 = self.param("arguments2", None)?;
        let allow_v1 = self.param_bool("allow_arguments_v1", None, false)?.0;
        let parsed = match (&a1, &a2) {
            (Some((_, at)), Some(_)) if !allow_v1 => {
                return Err(self.err(
                    at,
                    "If you wish to specify both 'arguments' and 'arguments2' for maximal compatibility with different versions of Condor, then you must also specify allow_arguments_v1=true.",
                ))
            }
            (_, Some((v, at))) => args::parse_arguments_v2(v).map_err(|m| (at.clone(), m, v.clone())),
            (Some((v, at)), None) => args::parse_arguments(v).map_err(|m| (at.clone(), m, v.clone())),
            (None, None) => {
                if self.has("Args") || self.has("Arguments") {
                    return Ok(());
                }
                Ok(Arguments::V2(String::new()))
            }
        };
        match parsed {
            Ok(Arguments::V1(s)) => self.string("Args", &s),
            Ok(Arguments::V2(s)) => self.string("Arguments", &s),
            Err((at, m, v)) => {
                return Err(self.err(
                    &at,
                    format!("{m} (the full arguments you specified were: {v})"),
                ))
            }
        }
        Ok(())
    }

    pub(super) fn environment(&mut self) -> Result<(), SubmitError> {
        let env1 = self.param("environment", Some("env"))?;
        let env2 = self.param("environment2", None)?;
        let allow_v1 = self.param_bool("allow_environment_v1", None, false)?.0;
        let prefer_v1 = env1.is_some()
            && env2.is_none()
            && self
                .param("env", None)?
                .is_some_and(|(v, _)| !args::is_v2_quoted(&v));
        if let (Some((_, at)), Some(_)) = (&env1, &env2) {
            if !allow_v1 {
                return Err(self.err(
                    at,
                    "If you wish to specify both 'environment' and 'environment2' for maximal compatibility with different versions of Condor, then you must also specify allow_environment_v1=true.",
                ));
            }
        }
        let mut env = Environment::default();
        let merged = match (&env1, &env2) {
            (_, Some((v, at))) => env.merge_v2(v).map_err(|m| (at.clone(), m, v.clone())),
            (Some((v, at)), None) => env.merge(v).map_err(|m| (at.clone(), m, v.clone())),
            (None, None) => Ok(()),
        };
        if let Err((at, m, v)) = merged {
            return Err(self.err(
                &at,
                format!("{m} (the environment you specified was: '{v}')"),
            ));
        }
        if let Some((v, at)) = self.param("getenv", Some("get_env"))? {
            match parse_bool(&v) {
                Some(false) => {}
                Some(true) => {
                    for (k, val) in self.j.host.environment() {
                        env.import(&k, &val);
                    }
                }
                None => return Err(self.err(
                    &at,
                    "getenv with a list of variables is not supported by Aerie: use true or false",
                )),
            }
        }
        if prefer_v1 {
            let (v, at) = env1.clone().unwrap_or_default();
            let raw = env.to_v1().map_err(|m| {
                self.err(
                    &at,
                    format!("{m} (the environment you specified was: '{v}')"),
                )
            })?;
            self.string("Env", &raw);
            self.string("EnvDelim", ";");
        } else {
            self.string("Environment", &env.to_v2());
        }
        Ok(())
    }
}
