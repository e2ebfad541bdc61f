//! The SDKs as packages people install: the Python package's metadata and
//! type marker, the Rust crate from a project outside this workspace, and
//! the TypeScript SDK's committed `dist/` against its source.
//!
//! Steps that need a package registry (pip's build backend, the
//! `typescript` compiler) run when the registry or a warm cache answers and
//! say plainly on stderr when they were skipped; the checks that need
//! nothing from outside always run.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn text(out: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn python_sdk_is_a_typed_package_with_an_spdx_licence() {
    let py = repo().join("sdk/python");
    let toml = std::fs::read_to_string(py.join("pyproject.toml")).unwrap();
    assert!(
        toml.lines().any(|l| l.trim() == r#"license = "MIT""#),
        "PEP 639 licence string: {toml}"
    );
    assert!(
        !toml.contains("License :: OSI"),
        "no licence classifier beside it"
    );
    assert!(toml.contains(r#"zut_ext = ["py.typed"]"#), "{toml}");
    assert!(py.join("zut_ext/__init__.py").is_file());
    assert!(py.join("zut_ext/py.typed").is_file());

    // A wheel, when pip can fetch its build backend.
    let out_dir = tempfile::tempdir().unwrap();
    let built = Command::new("python3")
        .args(["-m", "pip", "wheel", "--no-deps", "--quiet", "-w"])
        .arg(out_dir.path())
        .arg(&py)
        .env("PATH", support::search_path())
        .output();
    let wheel = match built {
        Ok(o) if o.status.success() => std::fs::read_dir(out_dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .expect("pip wrote a wheel"),
        Ok(o) => {
            eprintln!(
                "SKIPPED the wheel build: pip wheel failed (no registry?): {}",
                text(&o)
            );
            return;
        }
        Err(e) => {
            eprintln!("SKIPPED the wheel build: python3 cannot run: {e}");
            return;
        }
    };
    let list = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print('\\n'.join(z.namelist())); \
             print(next(z.read(n).decode() for n in z.namelist() if n.endswith('METADATA')))",
        ])
        .arg(&wheel)
        .env("PATH", support::search_path())
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&list.stdout);
    assert!(listing.contains("zut_ext/py.typed"), "{listing}");
    assert!(listing.contains("zut_ext/__init__.py"), "{listing}");
    assert!(listing.contains("License-Expression: MIT"), "{listing}");
}

/// A project of its own, outside this workspace, depending on the SDK by
/// path as the Rust SDK's README says, builds offline.
#[test]
fn rust_sdk_builds_in_a_project_outside_the_workspace() {
    let readme = std::fs::read_to_string(repo().join("sdk/rust/README.md")).unwrap();
    assert!(
        readme.contains(r#"zut-ext = { path = "#),
        "the README gives the dependency line: {readme}"
    );
    let dir = tempfile::tempdir().unwrap();
    let sdk = repo().join("sdk/rust");
    std::fs::write(
        dir.path().join("Cargo.toml"),
        format!(
            "[package]\nname = \"outside\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nzut-ext = {{ path = {:?} }}\nserde = {{ version = \"1\", features = [\"derive\"] }}\nserde_json = \"1\"\n",
            sdk.display().to_string()
        ),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        r#"
#[derive(serde::Deserialize)]
struct Args { text: String }

fn main() -> Result<(), zut_ext::Error> {
    let mut ext = zut_ext::Extension::new("outside", "0.1.0");
    let state = ext.state(0u64);
    ext.typed_tool("shout", "Upper-case text.", serde_json::json!({
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]
    }), move |call, a: Args| {
        call.progress(Some("shouting"), None, None);
        state.update(|n| *n += 1);
        zut_ext::text_result(a.text.to_uppercase())
    });
    ext.intercept_agent_end(|_| zut_ext::AgentEndDecision::done());
    ext.run()
}
"#,
    )
    .unwrap();
    // Its own target directory would rebuild serde from scratch; the
    // test's is shared with the workspace's dependencies.
    let target = option_env!("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    let out = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--quiet"])
        .current_dir(dir.path())
        .env("CARGO_TARGET_DIR", target.join("outside-sdk"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// Everything `src/index.ts` exports, by name.
fn ts_exports(src: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in src.lines() {
        let Some(rest) = line.strip_prefix("export ") else {
            continue;
        };
        let rest = rest.strip_prefix("declare ").unwrap_or(rest);
        let mut words = rest.split(|c: char| !(c.is_alphanumeric() || c == '_'));
        let kind = words.next().unwrap_or_default();
        if !["function", "class", "const", "interface", "type"].contains(&kind) {
            continue;
        }
        if let Some(name) = words.find(|w| !w.is_empty()) {
            names.push(format!("{kind} {name}"));
        }
    }
    names
}

#[test]
fn typescript_dist_matches_its_source() {
    let ts = repo().join("sdk/typescript");
    let src = std::fs::read_to_string(ts.join("src/index.ts")).unwrap();
    let js = std::fs::read_to_string(ts.join("dist/index.js")).unwrap();
    let dts = std::fs::read_to_string(ts.join("dist/index.d.ts")).unwrap();

    // Without a compiler: every export of the source is in the
    // declarations, every runtime export in the JavaScript, and the other
    // way round; a change to the API surface that was not rebuilt fails.
    let exports = ts_exports(&src);
    assert!(exports.len() > 40, "{exports:?}");
    for e in &exports {
        let (kind, name) = e.split_once(' ').unwrap();
        let declared = dts.lines().any(|l| {
            let l = l.trim_start();
            (l.starts_with("export ") || l.starts_with("declare "))
                && ts_exports(&format!("export {}", l.trim_start_matches("export ")))
                    .iter()
                    .any(|x| x.ends_with(&format!(" {name}")))
        });
        assert!(
            declared,
            "dist/index.d.ts lacks {e}: rebuild with npm run build"
        );
        if ["function", "class", "const"].contains(&kind) {
            assert!(
                js.contains(&format!("exports.{name} = "))
                    || js.contains(&format!("exports.{name};")),
                "dist/index.js lacks {e}: rebuild with npm run build"
            );
        }
    }

    // With the compiler the package-lock pins: the build must be byte for
    // byte what is committed.
    let lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ts.join("package-lock.json")).unwrap()).unwrap();
    let version = lock["packages"]["node_modules/typescript"]["version"]
        .as_str()
        .expect("package-lock pins typescript")
        .to_string();
    let cache = std::env::temp_dir().join(format!("zut-tsc-{version}"));
    let tsc = cache.join("node_modules/.bin/tsc");
    if !tsc.is_file() {
        let got = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--prefer-offline",
                "--prefix",
            ])
            .arg(&cache)
            .arg(format!("typescript@{version}"))
            .env("PATH", support::search_path())
            .output();
        match got {
            Ok(o) if o.status.success() && tsc.is_file() => {}
            Ok(o) => {
                eprintln!(
                    "SKIPPED the byte-for-byte dist check: cannot install typescript@{version}: {}",
                    text(&o)
                );
                return;
            }
            Err(e) => {
                eprintln!("SKIPPED the byte-for-byte dist check: npm cannot run: {e}");
                return;
            }
        }
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(&tsc)
        .args(["-p", "."])
        .arg("--outDir")
        .arg(out_dir.path())
        .current_dir(&ts)
        .env("PATH", support::search_path())
        .output()
        .unwrap();
    assert!(out.status.success(), "tsc: {}", text(&out));
    for f in ["index.js", "index.d.ts"] {
        let built = std::fs::read_to_string(out_dir.path().join(f)).unwrap();
        let committed = std::fs::read_to_string(ts.join("dist").join(f)).unwrap();
        assert!(
            built == committed,
            "sdk/typescript/dist/{f} is not the build of src/index.ts (tsc {version}); run npm run build"
        );
    }
}
