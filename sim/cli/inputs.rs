//! Loading what commands read: scenarios (files, folders, the suite), config files, engine
//! flags; and printing what loopsim has to say about them (warnings name file, line and key).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use loopsim_engine::profile::ProfileName;
use loopsim_world::engine_bridge::EngineChoice;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::RunOptions;
use loopsim_world::user_config::UserConfig;

use crate::args::{EngineArgs, EngineName};
use crate::out::warn;
use crate::suite;

/// A scenario file, or the built-in scenario a missing `scenarios/NAME.toml` (or `NAME`) names.
pub fn scenario(path: &Path) -> Result<Scenario> {
    let sc = if !path.exists()
        && let Some((name, text)) = suite::lookup(path)
    {
        Scenario::parse(text, &suite::path_of(name))?
    } else {
        Scenario::load(path)?
    };
    for w in &sc.warnings {
        warn(w);
    }
    Ok(sc)
}

/// The `.toml` files of a folder, sorted.
pub fn scenario_paths(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot read the scenario folder", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
        .collect();
    paths.sort();
    if paths.is_empty() {
        bail!(
            "{}: no scenario (.toml) files in this folder",
            dir.display()
        );
    }
    Ok(paths)
}

/// The suite: `--suite DIR`, else `./scenarios` if it exists, else the built-in one.
pub fn suite(dir: Option<&Path>) -> Result<Vec<Scenario>> {
    let local = Path::new("scenarios");
    match dir {
        Some(d) => load_all(&scenario_paths(d)?),
        None if local.is_dir() => load_all(&scenario_paths(local)?),
        None => suite::SUITE
            .iter()
            .map(|(name, text)| {
                Scenario::parse(text, &suite::path_of(name)).map_err(anyhow::Error::from)
            })
            .collect(),
    }
}

fn load_all(paths: &[PathBuf]) -> Result<Vec<Scenario>> {
    paths.iter().map(|p| scenario(p)).collect()
}

/// Scenarios from files and folders, or the suite when none is given. Two with one name are
/// refused: reports and baselines name scenarios.
pub fn scenarios(paths: &[PathBuf], suite_dir: Option<&Path>) -> Result<Vec<Scenario>> {
    let out = if paths.is_empty() {
        suite(suite_dir)?
    } else {
        let mut files = Vec::new();
        for p in paths {
            if p.is_dir() {
                files.extend(scenario_paths(p)?);
            } else {
                files.push(p.clone());
            }
        }
        load_all(&files)?
    };
    for (i, a) in out.iter().enumerate() {
        if let Some(b) = out[..i].iter().find(|b| b.file.name == a.file.name) {
            bail!(
                "{} and {} are both named `{}`: give scenarios distinct names",
                b.path,
                a.path,
                a.file.name
            );
        }
    }
    Ok(out)
}

/// A user's config.yaml, parsed.
pub fn user_config(path: Option<&Path>) -> Result<Option<Arc<UserConfig>>> {
    path.map(|p| UserConfig::load(p).map(Arc::new).map_err(Into::into))
        .transpose()
}

/// Refuses an empty `--platform` and warns about a name Hermes does not ship.
pub fn check_platform(platform: Option<&str>) -> Result<()> {
    if platform.is_some_and(|p| p.trim().is_empty()) {
        bail!(
            "--platform: give a platform name (`loopsim codes` lists them), or leave the flag out for the scenario's own"
        );
    }
    if let Some(w) = platform.and_then(loopsim_engine::platform::warning) {
        warn(format!("--platform: {w}"));
    }
    Ok(())
}

/// Prints every warning about the config of these runs (see
/// [`loopsim_world::user_config::run_warnings`]).
pub fn config_warnings(
    runs: &[(&Scenario, ProfileName)],
    platform: Option<&str>,
    user: Option<&UserConfig>,
) -> Result<()> {
    for d in loopsim_world::user_config::run_warnings(runs, platform, user)? {
        warn(d);
    }
    Ok(())
}

/// Run options for a scenario from the engine flags.
pub fn run_options(args: &EngineArgs) -> Result<RunOptions> {
    Ok(RunOptions {
        profile: args.profile,
        config: user_config(args.config.as_deref())?,
        platform: args.platform.clone(),
        wrong_port: wrong_port()?,
        ..RunOptions::default()
    })
}

/// `LOOPSIM_TEST_WRONG_PORT`: a deliberately wrong port, for the tests that prove the live
/// diff catches one. Unset in normal use.
pub fn wrong_port() -> Result<Option<loopsim_world::sim::WrongPort>> {
    use loopsim_world::sim::WrongPort;
    match std::env::var("LOOPSIM_TEST_WRONG_PORT") {
        Err(_) => Ok(None),
        Ok(v) => match WrongPort::parse(&v) {
            Some(w) => {
                warn(format!(
                    "LOOPSIM_TEST_WRONG_PORT={v}: this run uses a deliberately wrong port"
                ));
                Ok(Some(w))
            }
            None => bail!(
                "LOOPSIM_TEST_WRONG_PORT={v}: expected one of {}",
                WrongPort::NAMES.join(", ")
            ),
        },
    }
}

/// The Python to use: the one given after `=`, else `$ENV_VAR`, else the project's
/// `target/VENV` if it exists, else `python3`.
pub fn python_for(given: Option<&Path>, env_var: &str, venv: &str) -> PathBuf {
    given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(env_var).map(PathBuf::from))
        .unwrap_or_else(|| {
            let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target")
                .join(venv)
                .join("bin/python");
            if venv.exists() {
                venv
            } else {
                PathBuf::from("python3")
            }
        })
}

/// The engine a line named, with its Python and adapter found.
pub fn engine_choice(name: &EngineName) -> Result<EngineChoice> {
    match name {
        EngineName::Builtin => Ok(EngineChoice::Builtin),
        EngineName::HermesPython(python) => {
            let python = python_for(python.as_deref(), "LOOPSIM_PYTHON", "hermes-venv");
            let adapter = std::env::var_os("LOOPSIM_HERMES_ADAPTER")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bridges/hermes/adapter.py")
                });
            if !adapter.exists() {
                bail!(
                    "--engine hermes-python: the adapter {} does not exist (set LOOPSIM_HERMES_ADAPTER)",
                    adapter.display()
                );
            }
            Ok(EngineChoice::HermesPython { python, adapter })
        }
    }
}

/// The Python package is one version: only its profile can be compared fairly.
pub fn check_engine_profile(choice: &EngineChoice, profile: ProfileName) -> Result<()> {
    if matches!(choice, EngineChoice::HermesPython { .. }) && profile != ProfileName::Hermes0_19_0 {
        bail!(
            "--engine hermes-python runs the installed hermes-agent 0.19.0; use --profile hermes-0.19.0 (the scenario's profile is {profile})"
        );
    }
    Ok(())
}
