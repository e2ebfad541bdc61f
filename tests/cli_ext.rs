//! `zut ext …` end to end through the library entry point: each test gets
//! its own temporary `$ZUT_HOME` and project directory in its
//! `CliContext`, so nothing touches the real home and tests run in
//! parallel without process-global changes.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use zut::cancel::{self, CancelToken};
use zut::cli::{run_ext_io, CliContext, Io};

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    ctx: CliContext,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ctx = CliContext {
            cwd: root.join("proj"),
            zut_home: root.join("home"),
            ext_paths: Vec::new(),
            no_extensions: false,
        };
        fs::create_dir_all(&ctx.cwd).unwrap();
        fs::create_dir_all(&ctx.zut_home).unwrap();
        Env {
            _tmp: tmp,
            root,
            ctx,
        }
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, CancelToken::never())
    }

    fn run_with(&self, args: &[&str], cancel: CancelToken) -> Run {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_ext_io(
            &args,
            &self.ctx,
            &mut Io {
                out: &mut out,
                err: &mut err,
                out_is_tty: false,
                color: false,
                cancel,
            },
        );
        let run = Run {
            code,
            out: String::from_utf8_lossy(&out).into_owned(),
            err: String::from_utf8_lossy(&err).into_owned(),
        };
        eprintln!("zut ext {args:?} -> {}\n{}{}", run.code, run.out, run.err);
        run
    }

    fn extensions(&self) -> PathBuf {
        self.ctx.zut_home.join("extensions")
    }

    /// Every entry of `$ZUT_HOME/extensions`, hidden ones included.
    fn installed(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.extensions())
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// A source directory `name` under the test root with `manifest` and
    /// an executable `run.sh`.
    fn source(&self, name: &str, manifest: &str) -> PathBuf {
        let dir = self.root.join("src").join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("extension.json"), manifest).unwrap();
        write_exec(&dir.join("run.sh"), "#!/bin/sh\necho hi\n");
        dir
    }
}

#[derive(Debug)]
struct Run {
    code: i32,
    out: String,
    err: String,
}

fn write_exec(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const HELLO: &str =
    r#"{"name":"hello","version":"1.0.0","exec":"./run.sh","description":"says hi"}"#;

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
        || Command::new(tool)
            .arg("version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(st.status.success(), "git {args:?}: {st:?}");
}

#[test]
fn install_copies_the_whole_directory_but_git_and_follows_links() {
    let env = Env::new();
    let src = env.source("hello", HELLO);
    // .gitignore is not applied: ignored files are often built ones.
    fs::write(
        src.join(".gitignore"),
        "run.sh\ntarget/\n*.log\n!keep.log\ndist/\n",
    )
    .unwrap();
    fs::create_dir_all(src.join("dist")).unwrap();
    fs::write(src.join("dist/index.js"), "built").unwrap();
    fs::create_dir_all(src.join(".git/objects")).unwrap();
    fs::write(src.join(".git/HEAD"), "ref").unwrap();
    fs::create_dir_all(src.join("target/debug")).unwrap();
    fs::write(src.join("target/debug/big"), "x").unwrap();
    fs::write(src.join("debug.log"), "x").unwrap();
    fs::write(src.join("keep.log"), "x").unwrap();
    fs::create_dir_all(src.join("data/deep")).unwrap();
    fs::write(src.join("data/deep/file.txt"), "data").unwrap();
    std::os::unix::fs::symlink("data/deep/file.txt", src.join("link.txt")).unwrap();
    std::os::unix::fs::symlink("data", src.join("datalink")).unwrap();
    let before = listing(&src);

    let r = env.run(&["install", s(&src)]);
    assert_eq!(r.code, 0, "{r:?}");
    let dest = env.extensions().join("hello");
    assert!(
        r.err
            .contains(&format!("installed hello 1.0.0 to {}", dest.display())),
        "{r:?}"
    );
    assert_eq!(env.installed(), ["hello"]);
    assert_eq!(
        mode(&dest.join("run.sh")),
        0o755,
        "ignored exec still copied"
    );
    assert!(!dest.join(".git").exists());
    assert!(dest.join("target/debug/big").exists());
    assert!(dest.join("debug.log").exists());
    assert!(dest.join("keep.log").exists());
    assert_eq!(
        fs::read_to_string(dest.join("dist/index.js")).unwrap(),
        "built"
    );
    assert!(dest.join(".gitignore").exists());
    assert_eq!(
        fs::read_to_string(dest.join("data/deep/file.txt")).unwrap(),
        "data"
    );
    let link = fs::symlink_metadata(dest.join("link.txt")).unwrap();
    assert!(link.is_file(), "in-tree file link copied as a regular file");
    assert_eq!(
        fs::read_link(dest.join("datalink")).unwrap(),
        Path::new("data")
    );
    assert_eq!(listing(&src), before, "source untouched");
}

/// Relative paths and kinds under `dir`, for "untouched" checks.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = fs::symlink_metadata(&p).unwrap();
            out.push(format!(
                "{} {:o}",
                p.strip_prefix(dir).unwrap().display(),
                meta.permissions().mode()
            ));
            if meta.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn install_dot_from_inside_the_source_and_launcher_warning() {
    let mut env = Env::new();
    let src = env.source(
        "nodey",
        r#"{"name":"nodey","exec":"zut-test-no-such-launcher","args":["index.js"],"skills":["skills","../up"]}"#,
    );
    env.ctx.cwd = src.clone();
    let r = env.run(&["install", "."]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.err.contains("warning: launcher"), "{r:?}");
    assert!(
        r.err.contains("skills path \"skills\" does not exist"),
        "{r:?}"
    );
    assert!(
        r.err
            .contains("skills path \"../up\" escapes the extension directory"),
        "{r:?}"
    );
    assert!(r.err.contains("installed nodey to"), "{r:?}");
    assert_eq!(env.installed(), ["nodey"]);
}

#[test]
fn install_from_a_local_git_repository() {
    if !have("git") {
        eprintln!("SKIPPED: git is not installed");
        return;
    }
    let env = Env::new();
    let repo = env.source("repo", HELLO);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    let url = format!("file://{}", repo.display());
    let r = env.run(&["install", &url]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        !r.err.contains("Cloning"),
        "git's chatter is kept back: {r:?}"
    );
    let dest = env.extensions().join("hello");
    assert!(dest.join(".git").is_dir(), "clone keeps .git");
    assert_eq!(mode(&dest.join("run.sh")), 0o755);
    assert_eq!(env.installed(), ["hello"]);
    let config = fs::read_to_string(dest.join(".git/config")).unwrap();
    assert!(
        config.to_lowercase().contains("hookspath = /dev/null"),
        "{config}"
    );

    // The same name again: refused from the cloned manifest, exactly.
    let r = env.run(&["install", &url]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err.contains(&format!(
            "the manifest cloned from {url} names the extension \"hello\", and {} already exists",
            dest.display()
        )),
        "{r:?}"
    );
    assert_eq!(env.installed(), ["hello"], "no staging left behind");
    assert_eq!(env.run(&["install", "--force", &url]).code, 0);

    // With --build too, the installed name is refused before any build.
    let r = env.run(&["install", "--build=go", &url]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.err.contains("names the extension \"hello\""), "{r:?}");
    assert!(!r.err.contains("building"), "{r:?}");
}

#[test]
fn reinstalling_a_repository_named_like_an_installed_extension_refuses_before_cloning() {
    if !have("git") {
        eprintln!("SKIPPED: git is not installed");
        return;
    }
    let env = Env::new();
    let repo = env.source("hello", HELLO);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    let url = format!("file://{}.git", repo.display());
    // `hello.git` does not exist: a clone would fail, so only a refusal
    // made before cloning can pass this.
    fs::create_dir_all(env.extensions().join("hello")).unwrap();
    let r = env.run(&["install", &url]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.err.contains("nothing was cloned"), "{r:?}");
    assert!(!r.err.contains("git clone"), "{r:?}");
}

#[test]
fn git_clone_failure_and_escaping_link_in_a_repository_roll_back() {
    if !have("git") {
        eprintln!("SKIPPED: git is not installed");
        return;
    }
    let env = Env::new();
    let r = env.run(&[
        "install",
        &format!("file://{}/nope.git", env.root.display()),
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.err.contains("git clone of"), "{r:?}");
    assert!(
        r.err.contains("git said:"),
        "git's own message on failure: {r:?}"
    );
    assert_eq!(env.installed(), Vec::<String>::new());

    let repo = env.source("repo", HELLO);
    std::os::unix::fs::symlink("/etc/hostname", repo.join("host")).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    let r = env.run(&["install", &format!("file://{}", repo.display())]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err.contains("symlink") && r.err.contains("/etc/hostname"),
        "{r:?}"
    );
    assert_eq!(env.installed(), Vec::<String>::new());
}

#[test]
fn missing_executable_rolls_back() {
    let env = Env::new();
    let src = env.source("m", r#"{"name":"m","exec":"./bin/m"}"#);
    let r = env.run(&["install", s(&src)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.err.contains("\"./bin/m\" is missing"), "{r:?}");
    assert!(r.err.contains("--build"), "{r:?}");
    assert_eq!(env.installed(), Vec::<String>::new(), "nothing left behind");
}

#[test]
fn non_executable_script_is_refused_with_chmod_guidance() {
    let env = Env::new();
    let src = env.source("hello", HELLO);
    fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o644)).unwrap();
    let r = env.run(&["install", s(&src)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.err.contains("chmod +x"), "{r:?}");
    assert_eq!(env.installed(), Vec::<String>::new());
}

#[test]
fn manifest_errors_roll_back() {
    let env = Env::new();
    for (i, manifest) in [
        "{not json",
        r#"{"name":".hidden","exec":"./run.sh"}"#,
        r#"{"name":" pad","exec":"./run.sh"}"#,
        r#"{"name":"x","exec":"../outside"}"#,
        r#"{"version":"1"}"#,
    ]
    .iter()
    .enumerate()
    {
        let src = env.source(&format!("bad{i}"), manifest);
        let r = env.run(&["install", s(&src)]);
        assert_eq!(r.code, 1, "{manifest}: {r:?}");
        assert!(r.err.contains("extension.json"), "{r:?}");
        assert_eq!(env.installed(), Vec::<String>::new(), "{manifest}");
    }
    let r = env.run(&["install", s(&env.root.join("src/nowhere"))]);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("not a directory"), "{r:?}");
    let r = env.run(&["install", s(&env.root.join("src/bad0/run.sh"))]);
    assert!(r.err.contains("not a directory"), "{r:?}");
}

#[test]
fn symlink_escaping_the_source_is_refused() {
    let env = Env::new();
    let src = env.source("hello", HELLO);
    fs::write(env.root.join("secret"), "s").unwrap();
    std::os::unix::fs::symlink(env.root.join("secret"), src.join("innocent")).unwrap();
    let r = env.run(&["install", s(&src)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.err.contains("innocent"), "names the link: {r:?}");
    assert!(
        r.err.contains(&*env.root.join("secret").to_string_lossy()),
        "{r:?}"
    );
    assert_eq!(env.installed(), Vec::<String>::new());
}

#[test]
fn existing_destination_is_refused_and_force_replaces_it() {
    let env = Env::new();
    let v1 = env.source("v1", HELLO);
    let v2 = env.source("v2", &HELLO.replace("1.0.0", "2.0.0"));
    fs::write(v2.join("new.txt"), "2").unwrap();
    assert_eq!(env.run(&["install", s(&v1)]).code, 0);
    let dest = env.extensions().join("hello");

    let r = env.run(&["install", s(&v2)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err.contains("already exists") && r.err.contains("--force"),
        "{r:?}"
    );
    assert!(fs::read_to_string(dest.join("extension.json"))
        .unwrap()
        .contains("1.0.0"));

    let r = env.run(&["install", "--force", s(&v2)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(fs::read_to_string(dest.join("extension.json"))
        .unwrap()
        .contains("2.0.0"));
    assert!(dest.join("new.txt").exists());
    assert_eq!(env.installed(), ["hello"], "old copy and staging are gone");

    // A failing --force install keeps the installed copy.
    fs::remove_file(v1.join("run.sh")).unwrap();
    let r = env.run(&["install", "--force", s(&v1)]);
    assert_eq!(r.code, 1);
    assert!(dest.join("new.txt").exists());
    assert_eq!(env.installed(), ["hello"]);
}

/// A tiny crate; `broken` makes it fail to compile.
fn crate_source(env: &Env, name: &str, broken: bool) -> PathBuf {
    let src = env.root.join("src").join(name);
    fs::create_dir_all(src.join("src")).unwrap();
    fs::write(
        src.join("Cargo.toml"),
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"),
    )
    .unwrap();
    let body = if broken {
        "fn main() { let x: u32 = \"not a number\"; }\n"
    } else {
        "fn main() { println!(\"hi\"); }\n"
    };
    fs::write(src.join("src/main.rs"), body).unwrap();
    fs::write(
        src.join("extension.json"),
        format!(r#"{{"name":"{name}","exec":"./bin/{name}"}}"#),
    )
    .unwrap();
    src
}

#[test]
fn build_failure_rolls_back_and_leaves_the_source_alone() {
    let env = Env::new();
    let (builder, src) = if have("go") {
        let src = env.root.join("src/gobroken");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("go.mod"), "module gobroken\n\ngo 1.20\n").unwrap();
        fs::write(
            src.join("main.go"),
            "package main\nfunc main() { var x int = \"no\" }\n",
        )
        .unwrap();
        fs::write(
            src.join("extension.json"),
            r#"{"name":"gobroken","exec":"./gobroken"}"#,
        )
        .unwrap();
        ("go", src)
    } else if have("cargo") {
        eprintln!("go is not installed: testing the build failure with cargo");
        ("cargo", crate_source(&env, "broken", true))
    } else {
        eprintln!("SKIPPED: neither go nor cargo is installed");
        return;
    };
    let before = listing(&src);
    let r = env.run(&["install", &format!("--build={builder}"), s(&src)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err.contains(&format!(
            "building {}",
            src.file_name().unwrap().to_string_lossy()
        )),
        "{r:?}"
    );
    assert!(r.err.contains(&format!("{builder} build of")), "{r:?}");
    assert!(
        r.err.lines().count() > 2,
        "shows the build's last lines: {r:?}"
    );
    assert_eq!(
        env.installed(),
        Vec::<String>::new(),
        "no staging, no scratch"
    );
    assert_eq!(listing(&src), before, "source untouched");
}

#[test]
fn cargo_build_installs_the_binary() {
    if !have("cargo") {
        eprintln!("SKIPPED: cargo is not installed");
        return;
    }
    let env = Env::new();
    let src = crate_source(&env, "tiny", false);
    // A stale build in the source is the build tool's output: left out.
    fs::create_dir_all(src.join("target/release")).unwrap();
    fs::write(src.join("target/release/stale"), "old").unwrap();
    let before = listing(&src);
    let r = env.run(&["install", "--build", "cargo", s(&src)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!env.extensions().join("tiny/target").exists());
    let exe = env.extensions().join("tiny/bin/tiny");
    assert_eq!(mode(&exe), 0o755);
    let out = Command::new(&exe).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    assert_eq!(
        listing(&src),
        before,
        "no target/ or Cargo.lock in the source"
    );
    assert_eq!(env.installed(), ["tiny"]);
}

#[test]
fn cargo_build_installs_from_a_git_repository() {
    if !have("cargo") || !have("git") {
        eprintln!("SKIPPED: cargo or git is not installed");
        return;
    }
    let env = Env::new();
    let src = crate_source(&env, "tiny", false);
    git(&src, &["init", "-q"]);
    git(&src, &["add", "."]);
    git(&src, &["commit", "-q", "-m", "init"]);
    let url = format!("file://{}", src.display());
    let r = env.run(&["install", "--build=cargo", &url]);
    assert_eq!(r.code, 0, "{r:?}");
    let dest = env.extensions().join("tiny");
    assert!(dest.join(".git").is_dir(), "the clone is what is installed");
    assert!(!dest.join("target").exists() && !dest.join("Cargo.lock").exists());
    let out = Command::new(dest.join("bin/tiny")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    assert_eq!(env.installed(), ["tiny"]);
}

#[test]
fn build_preflight_errors() {
    let env = Env::new();
    let launcher = env.source("l", r#"{"name":"l","exec":"node"}"#);
    let r = env.run(&["install", "--build=go", s(&launcher)]);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("launcher"), "{r:?}");
    let theme = env.root.join("src/theme");
    fs::create_dir_all(&theme).unwrap();
    fs::write(theme.join("extension.json"), r#"{"name":"theme"}"#).unwrap();
    fs::write(theme.join("theme.json"), "{}").unwrap();
    let r = env.run(&["install", "--build=cargo", s(&theme)]);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("theme-only"), "{r:?}");
    if !have("go") {
        let src = env.source("gone", r#"{"name":"gone","exec":"./gone"}"#);
        let r = env.run(&["install", "--build=go", s(&src)]);
        assert_eq!(r.code, 1);
        assert!(
            r.err.contains("go is not installed or not on PATH"),
            "{r:?}"
        );
    }
    let r = env.run(&["install", "--build=make", s(&theme)]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("unsupported builder"), "{r:?}");
    assert_eq!(env.installed(), Vec::<String>::new());

    let r = env.run(&["install", s(&theme)]);
    assert_eq!(r.code, 0, "a theme-only extension installs: {r:?}");
}

const ODD: &str = "{ \"version\" :\"1\",\n\n\t\"enabled\"   :true ,\"name\":\"odd\",  \"exec\":\"./run.sh\",\n  \"nested\": {\"enabled\": true}, \"z\": [1, 2]\n}  \n";

impl Env {
    /// `(name, source, state)` of every row of `zut ext list --json`.
    fn states(&self) -> Vec<(String, String, String)> {
        let r = self.run(&["list", "--json"]);
        assert_eq!(r.code, 0, "{r:?}");
        let rows: Vec<serde_json::Value> = serde_json::from_str(&r.out).unwrap();
        rows.iter()
            .map(|r| {
                let f = |k: &str| r[k].as_str().unwrap().to_string();
                (f("name"), f("source"), f("state"))
            })
            .collect()
    }

    fn config(&self) -> serde_json::Value {
        serde_json::from_str(&fs::read_to_string(self.ctx.zut_home.join("config.json")).unwrap())
            .unwrap()
    }
}

fn row(name: &str, source: &str, state: &str) -> (String, String, String) {
    (name.into(), source.into(), state.into())
}

#[test]
fn enable_disable_leave_the_extension_alone_and_keep_other_settings() {
    let env = Env::new();
    let dir = env.extensions().join("odd");
    fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("extension.json");
    fs::write(&manifest, ODD).unwrap();
    write_exec(&dir.join("run.sh"), "#!/bin/sh\n");
    let config = env.ctx.zut_home.join("config.json");
    fs::write(
        &config,
        "{\"provider\": \"openai\", \"model\": \"gpt-x\", \"theme\": {\"name\": \"dark\"}}\n",
    )
    .unwrap();

    let r = env.run(&["disable", "odd"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.err.starts_with("disabled odd"), "{r:?}");
    assert!(r.err.contains("next time zut starts"), "{r:?}");
    assert!(r.err.contains(s(&config)), "names where: {r:?}");
    assert!(
        !r.err.contains("reload-ext"),
        "no interactive-only advice: {r:?}"
    );
    assert_eq!(fs::read_to_string(&manifest).unwrap(), ODD, "untouched");
    assert_eq!(
        env.config(),
        serde_json::json!({"provider": "openai", "model": "gpt-x", "theme": {"name": "dark"},
            "extensions_enabled": {"global": {"odd": false}}})
    );
    assert_eq!(mode(&config), 0o600);
    assert_eq!(env.states(), [row("odd", "global", "disabled")]);
    let r = env.run(&["list", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(rows[0]["enabled"], false);

    let again = env.run(&["disable", "odd"]);
    assert_eq!(again.code, 0);
    assert!(again.err.contains("already"), "{again:?}");

    let r = env.run(&["enable", "odd"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.err.starts_with("enabled odd"), "{r:?}");
    assert_eq!(fs::read_to_string(&manifest).unwrap(), ODD);
    assert_eq!(env.states(), [row("odd", "global", "enabled")]);
    assert_eq!(env.config()["model"], "gpt-x");
    assert_eq!(env.installed(), ["odd"], "no temporary files left");
    let home: Vec<String> = fs::read_dir(&env.ctx.zut_home)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        home.iter().all(|n| !n.starts_with('.')),
        "no temporary config left: {home:?}"
    );

    // Removing the extension forgets the choice.
    assert_eq!(env.run(&["disable", "odd"]).code, 0);
    assert_eq!(env.run(&["remove", "odd"]).code, 0);
    assert_eq!(
        env.config(),
        serde_json::json!({"provider": "openai", "model": "gpt-x", "theme": {"name": "dark"}})
    );
}

#[test]
fn the_manifest_key_still_disables_and_enable_overrides_it() {
    let env = Env::new();
    let dir = env.extensions().join("off");
    fs::create_dir_all(&dir).unwrap();
    let text = "{\"name\": \"off\", \"exec\": \"./run.sh\", \"enabled\": false}\n";
    fs::write(dir.join("extension.json"), text).unwrap();
    write_exec(&dir.join("run.sh"), "#!/bin/sh\n");
    assert_eq!(env.states(), [row("off", "global", "disabled")]);
    let doctor = env.run(&["doctor", "off"]);
    assert!(doctor.out.contains("zut ext enable off"), "{doctor:?}");

    let r = env.run(&["enable", "off"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!r.err.contains("already"), "{r:?}");
    assert_eq!(env.states(), [row("off", "global", "enabled")]);
    assert_eq!(
        fs::read_to_string(dir.join("extension.json")).unwrap(),
        text
    );
    assert_eq!(env.run(&["disable", "off"]).code, 0);
    assert_eq!(env.states(), [row("off", "global", "disabled")]);
}

#[test]
fn a_corrupt_config_is_named_and_kept() {
    let env = Env::new();
    let src = env.source("hello", HELLO);
    assert_eq!(env.run(&["install", s(&src)]).code, 0);
    let config = env.ctx.zut_home.join("config.json");
    for text in [
        "{\"model\": ",
        "{\"extensions_enabled\": {\"global\": {\"hello\": 0}}}",
    ] {
        fs::write(&config, text).unwrap();
        for verb in ["disable", "enable"] {
            let r = env.run(&[verb, "hello"]);
            assert_eq!(r.code, 1, "{r:?}");
            assert!(r.err.contains(s(&config)), "names the file: {r:?}");
            assert_eq!(fs::read_to_string(&config).unwrap(), text, "kept as it was");
        }
    }
}

#[test]
fn enable_prefers_the_project_copy_and_scope_flags_choose() {
    let env = Env::new();
    let project = env.ctx.cwd.join(".zut/extensions/dup");
    let global = env.extensions().join("dup");
    for d in [&project, &global] {
        fs::create_dir_all(d).unwrap();
        fs::write(d.join("extension.json"), r#"{"name":"dup","exec":"./x"}"#).unwrap();
    }
    assert_eq!(env.run(&["trust"]).code, 0);
    let r = env.run(&["disable", "dup"]);
    assert_eq!(r.code, 0);
    assert!(r.err.contains("note: a global copy also exists"), "{r:?}");
    // The project's choice is its own: the global copy is not disabled
    // (a disabled project copy still shadows it, as ever).
    assert_eq!(
        env.states(),
        [
            row("dup", "project", "disabled"),
            row("dup", "global", "shadowed")
        ]
    );
    let real = env.ctx.cwd.canonicalize().unwrap();
    assert_eq!(
        env.config()["extensions_enabled"],
        serde_json::json!({"project": {s(&real.join(".zut/extensions/dup")): false}})
    );
    // Another project with its own `dup` is not affected either.
    let other = Env {
        _tmp: tempfile::tempdir().unwrap(),
        root: env.root.clone(),
        ctx: CliContext {
            cwd: env.root.join("other"),
            ..env.ctx.clone()
        },
    };
    let elsewhere = other.ctx.cwd.join(".zut/extensions/dup");
    fs::create_dir_all(&elsewhere).unwrap();
    fs::write(
        elsewhere.join("extension.json"),
        r#"{"name":"dup","exec":"./x"}"#,
    )
    .unwrap();
    assert_eq!(other.run(&["trust"]).code, 0);
    assert_eq!(other.states()[0], row("dup", "project", "enabled"));

    let r = env.run(&["disable", "--global", "dup"]);
    assert_eq!(r.code, 0);
    assert_eq!(env.config()["extensions_enabled"]["global"]["dup"], false);
    assert_eq!(
        env.run(&["disable", "--global", "--project", "dup"]).code,
        2
    );

    let r = env.run(&["remove", "dup"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        !global.exists() && project.exists(),
        "remove takes the global copy"
    );
    let r = env.run(&["rm", "dup"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!project.exists(), "then the project one");
    assert_eq!(
        fs::read_dir(env.ctx.cwd.join(".zut/extensions"))
            .unwrap()
            .count(),
        0,
        "no hidden leftovers"
    );
    assert!(
        env.config().get("extensions_enabled").is_none(),
        "{:?}",
        env.config()
    );
}

#[test]
fn remove_deletes_and_unknown_names_get_suggestions() {
    let env = Env::new();
    let src = env.source("hello", HELLO);
    assert_eq!(env.run(&["install", s(&src)]).code, 0);

    let r = env.run(&["remove", "helo"]);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("did you mean \"hello\""), "{r:?}");
    let r = env.run(&["enable", "hellp"]);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("did you mean \"hello\""), "{r:?}");
    let r = env.run(&["disable", "zzzz"]);
    assert!(!r.err.contains("did you mean"), "{r:?}");
    assert!(r.err.contains("zut ext list"), "{r:?}");

    let r = env.run(&["remove", "hello", "--yes"]);
    assert_eq!(r.code, 0, "--yes is accepted and changes nothing: {r:?}");
    assert!(
        r.err.contains(&format!(
            "removed {}",
            env.extensions().join("hello").display()
        )),
        "{r:?}"
    );
    assert_eq!(env.installed(), Vec::<String>::new());
    assert_eq!(env.run(&["remove"]).code, 2);
    assert_eq!(env.run(&["install", s(&src)]).code, 0);
    assert_eq!(env.run(&["rm", "-y", "hello"]).code, 0);
    assert_eq!(env.installed(), Vec::<String>::new());
}

#[test]
fn list_json_shows_sources_and_shadowing() {
    let mut env = Env::new();
    let project = env.ctx.cwd.join(".zut/extensions/a");
    let global = env.extensions().join("a");
    for (d, v) in [(&project, "2"), (&global, "1")] {
        fs::create_dir_all(d).unwrap();
        fs::write(
            d.join("extension.json"),
            format!(r#"{{"name":"a","version":"{v}","exec":"./x","description":"the a"}}"#),
        )
        .unwrap();
    }
    let broken = env.extensions().join("broken");
    fs::create_dir_all(&broken).unwrap();
    fs::write(broken.join("extension.json"), "{").unwrap();
    let flag = env.source("f", r#"{"name":"f","exec":"./run.sh"}"#);
    env.ctx.ext_paths = vec![flag.clone()];

    // Untrusted, the project copy is listed as such and shadows nothing.
    let r = env.run(&["list", "--json"]);
    assert_eq!(r.code, 0);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&r.out).unwrap();
    assert_eq!(
        (&rows[1]["state"], &rows[2]["state"]),
        (&"untrusted".into(), &"enabled".into())
    );
    assert!(
        r.err
            .contains(&format!("zut ext trust {}", env.ctx.cwd.display())),
        "{r:?}"
    );
    let t = env.run(&["trust"]);
    assert_eq!(t.code, 0, "{t:?}");

    let r = env.run(&["list", "--json"]);
    assert_eq!(r.code, 0);
    assert!(r.err.is_empty(), "{r:?}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&r.out).unwrap();
    let summary: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["source"].as_str().unwrap().to_string(),
                r["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("f", "flag", "enabled"),
        ("a", "project", "enabled"),
        ("a", "global", "shadowed"),
        ("broken", "global", "invalid"),
    ]
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()));
    assert_eq!(summary, want);
    assert_eq!(rows[2]["shadowed_by"], s(&project));
    assert_eq!(rows[2]["shadowed_by_source"], "project");
    assert_eq!(rows[2]["version"], "1");
    assert_eq!(rows[1]["description"], "the a");
    assert!(rows[3]["error"].as_str().unwrap().contains("invalid JSON"));

    let table = env.run(&["list"]);
    assert_eq!(table.code, 0);
    let lines: Vec<&str> = table.out.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{table:?}");
    assert!(lines[3].contains("shadowed by project"), "{table:?}");
    let col = lines[0].find("STATUS").unwrap();
    assert!(
        lines.iter().skip(1).all(|l| !l[col..].starts_with(' ')),
        "aligned: {table:?}"
    );
    assert!(!table.out.contains('\x1b'), "no colour when not a terminal");

    // --no-extensions shapes a run, not the listing of what is installed.
    env.ctx.no_extensions = true;
    let same = env.run(&["list", "--json"]);
    assert_eq!(
        serde_json::from_str::<Vec<serde_json::Value>>(&same.out)
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn list_with_nothing_installed() {
    let env = Env::new();
    let r = env.run(&["list"]);
    assert_eq!(r.code, 0);
    assert!(r.out.is_empty());
    assert!(r.err.contains("no extensions installed"), "{r:?}");
    assert!(r.err.contains("zut ext install"), "{r:?}");
    let r = env.run(&["list", "--json"]);
    assert_eq!(r.out.trim(), "[]");
}

#[test]
fn logs_print_follow_and_missing() {
    let env = Env::new();
    let r = env.run(&["logs", "ghost"]);
    assert_eq!(r.code, 1);
    let path = env.ctx.zut_home.join("logs/ext-ghost.log");
    assert!(
        r.err
            .contains(&format!("no log for \"ghost\" at {}", path.display())),
        "{r:?}"
    );
    assert_eq!(env.run(&["logs", "../etc"]).code, 2);

    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, "one\n\x1b[31mtwo\x1b[0m\n").unwrap();
    let r = env.run(&["logs", "ghost"]);
    assert_eq!(r.code, 0);
    assert_eq!(
        r.out, "one\n\x1b[31mtwo\x1b[0m\n",
        "raw bytes when not a terminal"
    );

    let (canceller, token) = cancel::pair();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            use std::io::Write;
            let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(b"three\n").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(400));
            fs::write(&path, "new\n").unwrap(); // truncated and rewritten
            std::thread::sleep(std::time::Duration::from_millis(400));
            canceller.cancel();
        })
    };
    let r = env.run_with(&["logs", "-f", "ghost"], token);
    writer.join().unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.out, "one\n\x1b[31mtwo\x1b[0m\nthree\nnew\n", "{r:?}");
    assert!(r.err.contains("truncated"), "{r:?}");
}

#[test]
fn usage_and_help() {
    let env = Env::new();
    let r = env.run(&[]);
    assert_eq!(r.code, 2, "no command is a usage error, after the help");
    assert!(r.out.is_empty(), "{r:?}");
    for sub in [
        "list", "install", "remove", "enable", "disable", "logs", "doctor",
    ] {
        assert!(r.err.contains(sub), "{sub}: {r:?}");
    }
    let r = env.run(&["help"]);
    assert_eq!(r.code, 0);
    assert!(r.out.contains("doctor"), "{r:?}");
    let r = env.run(&["install", "--help"]);
    assert_eq!(r.code, 0);
    assert!(r.out.contains("--build <go|cargo>") && r.out.contains("--force"));
    let r = env.run(&["help", "logs"]);
    assert_eq!(r.code, 0);
    assert!(r.out.contains("--follow"), "{r:?}");
    let r = env.run(&["install", "--build", "make", "./x"]);
    assert_eq!(r.code, 2, "{r:?}");
    let r = env.run(&["instal"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("did you mean \"install\""), "{r:?}");
    let r = env.run(&["install"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("zut ext install --help"), "{r:?}");
    assert_eq!(env.run(&["install", "a", "b"]).code, 2);
    assert_eq!(env.run(&["list", "--bogus"]).code, 2);
    let r = env.run(&["doctor"]);
    assert_eq!(r.code, 0, "nothing installed is healthy");
    assert!(r.err.contains("no extensions installed"), "{r:?}");
    assert!(env
        .run(&["install", "http://example.com/x.git"])
        .err
        .contains("https"));
}

#[test]
fn interrupted_install_rolls_back() {
    let env = Env::new();
    let src = env.source("hello", HELLO);
    let (canceller, token) = cancel::pair();
    canceller.cancel();
    let r = env.run_with(&["install", s(&src)], token);
    assert_eq!(r.code, 130, "{r:?}");
    assert!(r.err.contains("interrupted"), "{r:?}");
    assert_eq!(env.installed(), Vec::<String>::new());
}
