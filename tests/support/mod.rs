//! Helpers shared by the integration tests: fixture extensions copied into
//! temporary directories, a host with shortened deadlines, and checks that
//! nothing (process or thread) outlives a host.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use zut::cancel::CancelToken;
use zut::events::{Collect, Event};
use zut::host::deadlines::Deadlines;
use zut::host::discovery::{self, Entry};
use zut::host::{Host, HostConfig};

/// `tests/fixtures/ext`.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ext")
}

/// PATH with the real Python interpreter's directory first (the pyenv
/// shim on PATH costs ~120 ms per start).
pub fn search_path() -> String {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import sys, os; print(os.path.dirname(os.path.realpath(sys.executable)))",
            ])
            .output()
            .expect("python3 is needed by the fixture extensions");
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
    })
    .clone()
}

/// A test's own directories: project cwd, ZUT_HOME and scratch files.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("proj")).unwrap();
        Sandbox { dir }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn cwd(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Copies fixture `name` into the sandbox with `extra` args appended
    /// (fx.py options like `pidfile=…`), returning its directory.
    pub fn fixture(&self, name: &str, extra: &[String]) -> PathBuf {
        self.fixture_as(name, name, extra)
    }

    /// Like [`Sandbox::fixture`], installed and named `dir_name` (the
    /// manifest and the hello frame both carry the new name).
    pub fn fixture_as(&self, name: &str, dir_name: &str, extra: &[String]) -> PathBuf {
        let src = fixtures().join(name);
        let dst = self.dir.path().join("exts").join(dir_name);
        std::fs::create_dir_all(&dst).unwrap();
        for entry in std::fs::read_dir(&src).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
        }
        let manifest_path = dst.join("extension.json");
        let mut m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
        if let Some(args) = m.get_mut("args").and_then(|a| a.as_array_mut()) {
            for a in args.iter_mut() {
                if a == "../fx.py" {
                    *a = fixtures().join("fx.py").display().to_string().into();
                }
            }
            args.extend(extra.iter().map(|s| serde_json::Value::from(s.as_str())));
            if dir_name != name {
                args.push(format!("name={dir_name}").into());
            }
        }
        if dir_name != name {
            m["name"] = dir_name.into();
        }
        std::fs::write(&manifest_path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
        dst
    }

    /// Host settings with deadlines short enough for tests.
    pub fn config(&self) -> HostConfig {
        HostConfig {
            zut_home: self.home(),
            cwd: self.cwd(),
            provider: "script".into(),
            model: "test-model".into(),
            deadlines: Deadlines {
                hello: Duration::from_millis(5_000),
                ready: Duration::from_millis(3_000),
                idle_ready: Duration::from_millis(250),
                command: Duration::from_millis(5_000),
                tool: Duration::from_millis(5_000),
                intercept: Duration::from_millis(2_000),
                shutdown_grace: Duration::from_millis(800),
                kill_grace: Duration::from_millis(400),
                write: Duration::from_millis(2_000),
                torn_frame: Duration::from_millis(250),
                exit_drain: Duration::from_millis(500),
            },
            interactive: false,
            search_path: Some(search_path().into()),
            skills: true,
            session: None,
        }
    }

    /// Discovers `dirs` as `--ext` paths (no installed extensions).
    pub fn entries(&self, dirs: &[PathBuf]) -> Vec<Entry> {
        discovery::discover(&discovery::Options {
            cwd: self.cwd(),
            zut_home: self.home(),
            ext_paths: dirs.to_vec(),
            no_extensions: true,
        })
    }

    /// Starts a host on `dirs` with `config`.
    pub fn start_with(&self, config: HostConfig, dirs: &[PathBuf]) -> (Host, Arc<Collect>) {
        let sink = Arc::new(Collect::default());
        let host = Host::start(
            config,
            sink.clone(),
            self.entries(dirs),
            &CancelToken::never(),
        );
        (host, sink)
    }

    /// Starts a host on `dirs` with the test deadlines.
    pub fn start(&self, dirs: &[PathBuf]) -> (Host, Arc<Collect>) {
        self.start_with(self.config(), dirs)
    }
}

/// The pids of every process the host started.
pub fn pids(host: &Host) -> Vec<u32> {
    host.started_pids()
}

/// Whether a process with this pid exists (a zombie counts as existing).
pub fn pid_exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence.
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

/// Shuts `host` down and asserts nothing is left: every child reaped (its
/// pid gone, so not a zombie) and every host thread joined.
pub fn shutdown_clean(host: Host) {
    let pids = pids(&host);
    host.shutdown();
    assert_eq!(host.live_threads(), 0, "host threads left running");
    for pid in pids {
        assert!(!pid_exists(pid), "child {pid} not reaped");
    }
}

/// Events of one type, by a predicate.
pub fn find(events: &[Event], f: impl Fn(&Event) -> bool) -> Vec<&Event> {
    events.iter().filter(|e| f(e)).collect()
}

/// The error message reported for `ext`, if any.
pub fn error_of(events: &[Event], ext: &str) -> Option<String> {
    events.iter().find_map(|e| match e {
        Event::ExtError { extension, message } if extension == ext => Some(message.clone()),
        _ => None,
    })
}

/// Warnings reported for `ext`.
pub fn warnings_of(events: &[Event], ext: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ExtWarning { extension, message } if extension == ext => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// Whether `ext` was reported loaded.
pub fn loaded(events: &[Event], ext: &str) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::ExtLoaded { extension, .. } if extension == ext))
}

/// Waits until `f` holds or `timeout` passes (for effects of other processes).
pub fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Shorthand for fx.py options.
pub fn opt(k: &str, v: impl AsRef<Path>) -> String {
    format!("{k}={}", v.as_ref().display())
}

/// The `zut` binary, run in the sandbox's project with its `ZUT_HOME`, the
/// fast Python first on PATH, no API keys and no stdin.
pub fn zut(sb: &Sandbox) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_zut"));
    c.current_dir(sb.cwd())
        .env("ZUT_HOME", sb.home())
        .env("PATH", search_path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ZUT_TRUST_ALL")
        .stdin(std::process::Stdio::null());
    c
}

/// Writes a scripted-provider script (format in zut(1)); returns its path.
pub fn script(sb: &Sandbox, lines: &[serde_json::Value]) -> String {
    let path = sb.path("script.jsonl");
    std::fs::write(
        &path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    path.display().to_string()
}

/// The names of the tools a provider request (a `--script-log` line)
/// offers, in order; none when it offers none.
pub fn tool_names(request: &serde_json::Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Parses JSON lines (the event stream, a script log).
pub fn json_lines(bytes: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs zut with these `--ext` directories, the scripted provider on
/// `script_lines`, and `extra` arguments; returns the output and the
/// requests the provider received (its `--script-log`).
pub fn run_scripted(
    sb: &Sandbox,
    exts: &[std::path::PathBuf],
    script_lines: &[serde_json::Value],
    extra: &[&str],
) -> (std::process::Output, Vec<serde_json::Value>) {
    let s = script(sb, script_lines);
    let log = sb.path("requests.jsonl");
    let _ = std::fs::remove_file(&log);
    let mut c = zut(sb);
    for e in exts {
        c.arg("-e").arg(e);
    }
    let out = c
        .args(["--provider", "script", "--script", &s, "--script-log"])
        .arg(&log)
        .args(extra)
        .output()
        .unwrap();
    let requests = std::fs::read(&log)
        .map(|b| json_lines(&b))
        .unwrap_or_default();
    (out, requests)
}

/// Builds the workspace package `package` (a Rust example extension) in
/// the debug profile, so its wrapper script finds a current binary. Quick
/// when it is up to date; `cargo test` at the root builds them already.
pub fn build_example(package: &str) {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--offline", "-p", package])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo build -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Bytes waiting in a pipe, and its capacity.
pub fn pipe_fill(fd: std::os::fd::RawFd) -> (usize, usize) {
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through a valid pointer; F_GETPIPE_SZ
    // takes no pointer.
    let capacity = unsafe {
        libc::ioctl(fd, libc::FIONREAD, &mut queued);
        libc::fcntl(fd, libc::F_GETPIPE_SZ)
    };
    (queued.max(0) as usize, capacity.max(0) as usize)
}

/// Installs an extension driven by `plan` (see `tests/fixtures/ext/plan.py`).
pub fn plan_ext(sb: &Sandbox, plan: serde_json::Value) -> PathBuf {
    let name = plan["name"].as_str().unwrap().to_string();
    let dir = sb.path("exts").join(&name);
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = serde_json::json!({
        "name": name, "version": "0.1.0", "exec": "python3",
        "args": [fixtures().join("plan.py").display().to_string()],
        "language": "python", "description": "test fixture: plan"
    });
    std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("plan.json"), plan.to_string()).unwrap();
    dir
}

/// A minimal installable extension source at `dir`: the manifest of
/// `hello` and an executable `run`.
pub fn hello_source(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        r#"{"name":"hello","exec":"./run"}"#,
    )
    .unwrap();
    std::fs::write(dir.join("run"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every entry of the sandbox's `$ZUT_HOME/extensions`, hidden ones
/// (staging directories) included.
pub fn installed(sb: &Sandbox) -> Vec<String> {
    std::fs::read_dir(sb.home().join("extensions"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Makes a FIFO at `path` (a file that blocks whoever opens it to read).
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(
        rc,
        0,
        "mkfifo {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}
