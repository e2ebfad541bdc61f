//! `zut ext new NAME`: writes a small, working extension to start from.
//!
//! The scaffold registers the command `/NAME` (it displays `hello, <args or
//! you> from NAME`) and the tool `NAME_echo` (it returns its arguments as
//! text), and ships a README and a `test.sh` that runs `zut ext test .`.
//!
//! Invariants:
//! - nothing comes from the network: the SDKs are compiled into zut
//!   (`include_str!`) and written beside the program (Python, TypeScript) or
//!   into `NAME/zut-ext/` as a path dependency (Rust; only serde and
//!   serde_json then come from crates.io or the cargo cache);
//! - an existing non-empty target directory is refused and never touched;
//!   the files are written into a temporary directory next to the target
//!   and renamed into place, so a failure leaves nothing half written;
//! - NAME obeys the manifest name rules and, because it also names a command
//!   and a tool, the tool name rules (A-Z a-z 0-9 _ -) and is no built-in
//!   command.

use super::{Failure, Io, Outcome};
use crate::host::manifest;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The languages a scaffold can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    /// Real TypeScript (`index.ts`, compiled with `npm run build`).
    TypeScript,
    /// Plain JavaScript that node runs as it is, typed with `// @ts-check`.
    JavaScript,
    Rust,
    Sh,
}

impl Lang {
    /// Parses `--lang`; the error is the usage message.
    pub(crate) fn parse(s: &str) -> Result<Lang, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "python" | "py" => Ok(Lang::Python),
            "typescript" | "ts" => Ok(Lang::TypeScript),
            "javascript" | "js" | "node" => Ok(Lang::JavaScript),
            "rust" | "rs" => Ok(Lang::Rust),
            "sh" | "shell" => Ok(Lang::Sh),
            other => Err(format!(
                "unknown language {other:?}: choose rust, python, typescript, javascript or sh"
            )),
        }
    }
}

/// The Python SDK, written beside a Python scaffold.
const PY_SDK: &str = crate::host::process::PYTHON_SDK;
/// The TypeScript SDK's compiled JavaScript and its types.
const TS_SDK: &str = include_str!("../../sdk/typescript/dist/index.js");
const TS_SDK_TYPES: &str = include_str!("../../sdk/typescript/dist/index.d.ts");
/// The Rust SDK's sources, written to `zut-ext/src/`: the crate zut was
/// built with carries them, so a published zut needs nothing outside it.
const RUST_SDK: &[(&str, &str)] = zut_ext::source::FILES;
const RUST_SDK_MANIFEST: &str = zut_ext::source::MANIFEST;

const PY_MAIN: &str = include_str!("scaffold/python_main.py");
const JS_MAIN: &str = include_str!("scaffold/javascript_index.js");
const TS_MAIN: &str = include_str!("scaffold/typescript_index.ts");
const TS_PACKAGE: &str = include_str!("scaffold/typescript_package.json");
const TS_CONFIG: &str = include_str!("scaffold/typescript_tsconfig.json");
const SH_MAIN: &str = include_str!("scaffold/sh_main.sh");
const RUST_MAIN: &str = include_str!("scaffold/rust_main.rs");
const RUST_CARGO: &str = include_str!("scaffold/rust_Cargo.toml");
const TEST_SH: &str = include_str!("scaffold/test.sh");

/// One file of a scaffold: path relative to the extension directory,
/// contents, and whether it is executable.
struct File {
    path: String,
    text: String,
    executable: bool,
}

fn file(path: &str, text: impl Into<String>) -> File {
    File {
        path: path.into(),
        text: text.into(),
        executable: false,
    }
}

fn program(path: &str, text: impl Into<String>) -> File {
    File {
        executable: true,
        ..file(path, text)
    }
}

/// Checks that `name` can name the extension, its command and its tool.
pub(crate) fn check_name(name: &str, lang: Lang) -> Result<(), String> {
    if name.starts_with('-') {
        // `zut ext new -- -rf` would write a directory no shell command
        // can name without care.
        return Err(format!(
            "invalid name {name:?}: a name cannot start with '-' (it reads as an option)"
        ));
    }
    manifest::check_name(name).map_err(|m| format!("invalid name: {m}"))?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "invalid name {name:?}: it names a command and a tool too, so use only A-Z a-z 0-9 _ -"
        ));
    }
    if name.len() > 59 {
        return Err(format!(
            "invalid name {name:?}: at most 59 characters (the tool {name}_echo must fit in 64)"
        ));
    }
    if crate::commands::is_reserved(name) {
        return Err(format!(
            "invalid name {name:?}: /{name} is a built-in zut command"
        ));
    }
    if lang == Lang::Rust && !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(format!(
            "invalid name {name:?}: a Rust package name must start with a letter"
        ));
    }
    Ok(())
}

/// Every file of the scaffold for `name` in `lang`.
fn files(name: &str, lang: Lang) -> Vec<File> {
    let tool = format!("{name}_echo");
    let fill = |t: &str| t.replace("@NAME@", name).replace("@TOOL@", &tool);
    let manifest_json = |exec: &str, args: &[&str], language: &str| {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), name.into());
        m.insert("version".into(), "0.1.0".into());
        m.insert("exec".into(), exec.into());
        if !args.is_empty() {
            m.insert("args".into(), args.to_vec().into());
        }
        m.insert("language".into(), language.into());
        m.insert(
            "description".into(),
            format!("/{name} says hello; the tool {tool} echoes its arguments").into(),
        );
        let mut text =
            serde_json::to_string_pretty(&serde_json::Value::Object(m)).unwrap_or_default();
        text.push('\n');
        text
    };
    let mut out = vec![program("test.sh", TEST_SH)];
    match lang {
        Lang::Python => {
            out.push(file(
                "extension.json",
                manifest_json("python3", &["main.py"], "python"),
            ));
            out.push(program("main.py", fill(PY_MAIN)));
            out.push(file("zut_ext.py", PY_SDK));
        }
        Lang::JavaScript => {
            out.push(file(
                "extension.json",
                manifest_json("node", &["index.js"], "javascript"),
            ));
            out.push(program("index.js", fill(JS_MAIN)));
            out.push(file("zut-ext.js", TS_SDK));
            out.push(file("zut-ext.d.ts", TS_SDK_TYPES));
        }
        Lang::TypeScript => {
            out.push(file(
                "extension.json",
                manifest_json("node", &["index.js"], "typescript"),
            ));
            out.push(file("index.ts", fill(TS_MAIN)));
            out.push(file("package.json", fill(TS_PACKAGE)));
            out.push(file("tsconfig.json", TS_CONFIG));
            out.push(file(".gitignore", "/node_modules\n/index.js\n"));
            out.push(file("zut-ext.js", TS_SDK));
            out.push(file("zut-ext.d.ts", TS_SDK_TYPES));
        }
        Lang::Sh => {
            out.push(file(
                "extension.json",
                manifest_json("./main.sh", &[], "sh"),
            ));
            out.push(program("main.sh", fill(SH_MAIN)));
        }
        Lang::Rust => {
            let exec = format!("./target/release/{name}");
            out.push(file("extension.json", manifest_json(&exec, &[], "rust")));
            out.push(file("Cargo.toml", fill(RUST_CARGO)));
            out.push(file("src/main.rs", fill(RUST_MAIN)));
            out.push(file(".gitignore", "/target\n"));
            out.push(file("zut-ext/Cargo.toml", sdk_manifest()));
            for (path, text) in RUST_SDK {
                out.push(file(&format!("zut-ext/src/{path}"), *text));
            }
        }
    }
    out.push(file("README.md", readme(name, lang)));
    out
}

/// The SDK crate's manifest made standalone: a `[package]` of its own
/// (nothing inherited from zut's workspace, never published) and the
/// dependency tables of the manifest zut was built with. That manifest is
/// the workspace's in this repository and cargo's normalised one in a
/// published package (`[dependencies.serde]` tables, listed targets): only
/// the `[dependencies...]` tables are kept from either.
fn sdk_manifest() -> String {
    let mut out = format!(
        "[package]\nname = \"zut-ext\"\npublish = false\nversion = \"{}\"\nedition = \"2021\"\nlicense = \"MIT\"\n\
         description = \"The zut extension SDK, vendored by `zut ext new`\"\n",
        env!("CARGO_PKG_VERSION")
    );
    out.push_str(&only_dependencies(RUST_SDK_MANIFEST));
    out
}

/// The `[dependencies]` and `[dependencies.NAME]` tables of a manifest,
/// each after a blank line.
fn only_dependencies(manifest: &str) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in manifest.lines() {
        let header = line.trim_start();
        if header.starts_with('[') {
            keep = header.starts_with("[dependencies]") || header.starts_with("[dependencies.");
            if keep {
                out.push('\n');
            }
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn readme(name: &str, lang: Lang) -> String {
    let tool = format!("{name}_echo");
    let (what, files, build) = match lang {
        Lang::Python => (
            "Python (3.9 or later, standard library only)",
            "- `main.py`: the extension (handlers only);\n\
             - `zut_ext.py`: the zut Python SDK, copied here by `zut ext new`.\n",
            String::new(),
        ),
        Lang::JavaScript => (
            "JavaScript for Node 18 or later, typed with `// @ts-check`",
            "- `index.js`: the extension (handlers only); node runs it as it is,\n  \
             nothing to install or build;\n\
             - `zut-ext.js`, `zut-ext.d.ts`: the zut TypeScript SDK (compiled)\n  \
             and its types, copied here by `zut ext new`.\n\n\
             For TypeScript with a compile step, start from\n\
             `zut ext new NAME --lang typescript` instead.\n",
            String::new(),
        ),
        Lang::TypeScript => (
            "TypeScript for Node 18 or later",
            "- `index.ts`: the extension (handlers only);\n\
             - `package.json`, `tsconfig.json`: `npm run build` compiles `index.ts`\n  \
             to `index.js`, which the manifest runs;\n\
             - `zut-ext.js`, `zut-ext.d.ts`: the zut TypeScript SDK (compiled)\n  \
             and its types, copied here by `zut ext new`; nothing else is needed\n  \
             at run time.\n",
            "Build it first (zut runs `index.js`):\n\n\
             ```sh\nnpm install && npm run build\n```\n\n\
             `npm install` fetches the TypeScript compiler (the `typescript`\n\
             package, a development dependency) once; `npm run build` then\n\
             works offline. With a warm npm cache, `npm install --offline` needs\n\
             no network either. Run `npm run build` again after each change.\n\n"
                .to_string(),
        ),
        Lang::Sh => (
            "plain POSIX sh, without an SDK",
            "- `main.sh`: the extension; it reads and writes the frames itself.\n",
            String::new(),
        ),
        Lang::Rust => (
            "Rust, with the zut-ext SDK",
            "- `src/main.rs`: the extension (handlers only);\n\
             - `zut-ext/`: the zut Rust SDK, copied here by `zut ext new`.\n",
            format!(
                "Build it first (zut runs `target/release/{name}`):\n\n\
                 ```sh\ncargo build --release\n```\n\n\
                 The SDK is here already; its dependencies, serde and serde_json,\n\
                 come from crates.io, so the first build needs the network or a\n\
                 warm cargo cache (`cargo build --release --offline`). If you set\n\
                 `CARGO_TARGET_DIR`, unset it for this build or copy the binary to\n\
                 `target/release/{name}`.\n\n"
            ),
        ),
    };
    format!(
        "# {name}\n\n\
         A zut extension in {what}, written by `zut ext new`.\n\n\
         - `/{name} [who]` shows \"hello, <who> from {name}\" (no model call);\n\
         - `{tool}` is a tool the model can call; it returns its arguments as text.\n\n\
         Files:\n\n\
         - `extension.json`: the manifest (name, how to start the program);\n\
         {files}\
         - `test.sh`: the test, see below.\n\n\
         ## Run\n\n\
         {build}\
         ```sh\n\
         zut --ext . -p \"/{name} there\"     # one run with this extension loaded\n\
         zut ext install .                  # install it for every run\n\
         ```\n\n\
         ## Test\n\n\
         `./test.sh` runs `zut ext test .`: zut starts the extension alone,\n\
         checks the handshake, the registrations, that each tool and command\n\
         answers, and a clean shutdown, and prints one PASS, WARN or FAIL line\n\
         per check. It exits non-zero when a check failed, so it fits CI.\n\n\
         The protocol is described in zut-extensions(7) (`man zut-extensions`).\n"
    )
}

/// Runs `zut ext new`: writes the scaffold to `<dir>/<name>`.
pub(crate) fn run(
    name: &str,
    lang: Lang,
    dir: Option<&str>,
    cwd: &Path,
    io: &mut Io<'_>,
) -> Outcome {
    check_name(name, lang).map_err(Failure::Usage)?;
    let parent = match dir {
        Some(d) if Path::new(d).is_absolute() => PathBuf::from(d),
        Some(d) => cwd.join(d),
        None => cwd.to_path_buf(),
    };
    let target = parent.join(name);
    let empty_existing = match fs::read_dir(&target) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(format!(
                    "{} already exists and is not empty; choose another name or --dir",
                    target.display()
                )
                .into());
            }
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(
                format!("{} already exists and is not a directory", target.display()).into(),
            )
        }
        Err(e) => return Err(format!("cannot use {}: {e}", target.display()).into()),
    };
    fs::create_dir_all(&parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".zut-ext-new-")
        .tempdir_in(&parent)
        .map_err(|e| format!("cannot write in {}: {e}", parent.display()))?;
    for f in files(name, lang) {
        let path = staging.path().join(&f.path);
        let fail =
            |e: std::io::Error| format!("cannot write {}: {e}", target.join(&f.path).display());
        if let Some(d) = path.parent() {
            fs::create_dir_all(d).map_err(fail)?;
        }
        fs::write(&path, &f.text).map_err(fail)?;
        let mode = if f.executable { 0o755 } else { 0o644 };
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).map_err(fail)?;
    }
    fs::set_permissions(staging.path(), fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot write in {}: {e}", parent.display()))?;
    if empty_existing {
        // rename(2) replaces an empty directory; a file appearing in it
        // meanwhile makes the rename fail instead of being lost.
        fs::remove_dir(&target).map_err(|e| format!("cannot replace {}: {e}", target.display()))?;
    }
    let staged = staging.keep();
    if let Err(e) = fs::rename(&staged, &target) {
        let _ = fs::remove_dir_all(&staged);
        return Err(format!("cannot create {}: {e}", target.display()).into());
    }
    let shown = match dir {
        None => format!("./{name}"),
        Some(_) => target.display().to_string(),
    };
    let next = match lang {
        Lang::Rust => format!("  cd {shown} && cargo build --release && cd -\n"),
        Lang::TypeScript => format!("  cd {shown} && npm install && npm run build && cd -\n"),
        _ => String::new(),
    };
    let _ = writeln!(
        io.err,
        "created {shown} ({}): command /{name}, tool {name}_echo\nnext:\n{next}  zut --ext {shown} -p \"/{name} there\"\n  {shown}/test.sh",
        match lang {
            Lang::Python => "python",
            Lang::TypeScript => "typescript",
            Lang::JavaScript => "javascript",
            Lang::Rust => "rust",
            Lang::Sh => "sh",
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_cannot_name_a_command_and_tool_are_refused() {
        assert!(check_name("hi", Lang::Python).is_ok());
        assert!(check_name("my-ext_2", Lang::Sh).is_ok());
        for bad in ["", " hi", ".hi", "a/b", "two words", "héllo", "new", "Help"] {
            assert!(check_name(bad, Lang::Python).is_err(), "{bad:?}");
        }
        assert!(check_name(&"x".repeat(60), Lang::Python).is_err());
        assert!(check_name("2fa", Lang::Python).is_ok());
        assert!(check_name("2fa", Lang::Rust).is_err());
    }

    #[test]
    fn languages_take_their_usual_names() {
        for (given, lang) in [
            ("Python", Lang::Python),
            ("py", Lang::Python),
            ("ts", Lang::TypeScript),
            ("node", Lang::JavaScript),
            ("js", Lang::JavaScript),
            ("rs", Lang::Rust),
            ("shell", Lang::Sh),
        ] {
            assert_eq!(Lang::parse(given), Ok(lang), "{given}");
        }
        let err = Lang::parse("cobol").unwrap_err();
        assert!(
            err.contains("\"cobol\"") && err.contains("javascript"),
            "{err}"
        );
    }

    #[test]
    fn sdk_manifest_stands_alone() {
        let m = sdk_manifest();
        assert!(!m.contains("workspace"), "{m}");
        assert!(m.contains("[dependencies]\n"), "{m}");
        // A published package's normalised manifest: its dependency tables
        // are kept, its target listings and workspace values are not.
        let normalised = "[package]\nname = \"zut-ext\"\nversion = \"0.1.0\"\nautotests = false\n\n\
            [lib]\nname = \"zut_ext\"\npath = \"src/lib.rs\"\n\n[[test]]\nname = \"golden\"\npath = \"tests/golden.rs\"\n\n\
            [dependencies.serde]\nversion = \"1\"\nfeatures = [\"derive\"]\n";
        let kept: String = only_dependencies(normalised);
        assert_eq!(
            kept,
            "\n[dependencies.serde]\nversion = \"1\"\nfeatures = [\"derive\"]\n"
        );
        assert!(m.contains("name = \"zut-ext\"\npublish = false\n"), "{m}");
        assert!(
            m.contains("version = \"") && m.contains("edition = \"2021\""),
            "{m}"
        );
        assert!(m.contains("serde_json"), "{m}");
    }

    #[test]
    fn every_scaffold_has_manifest_readme_test_and_no_placeholder() {
        for lang in [Lang::Python, Lang::TypeScript, Lang::Rust, Lang::Sh] {
            let fs = files("demo", lang);
            let names: Vec<&str> = fs.iter().map(|f| f.path.as_str()).collect();
            for want in ["extension.json", "README.md", "test.sh"] {
                assert!(names.contains(&want), "{lang:?}: {names:?}");
            }
            for f in &fs {
                assert!(
                    !f.text.contains("@NAME@") && !f.text.contains("@TOOL@"),
                    "{}",
                    f.path
                );
            }
            let m = fs.iter().find(|f| f.path == "extension.json").unwrap();
            let parsed = manifest::parse(Path::new("/x"), m.text.as_bytes()).unwrap();
            assert_eq!(parsed.name, "demo");
        }
    }
}
