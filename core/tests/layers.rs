//! The core's layers are true: each folder of `core/src` (and `error.rs`) imports only the
//! layers that ARCHITECTURE.md's table ("The core's layers") lets it use, every layer a row
//! uses stands in a lower row, and every use the table names is one the code makes. The
//! table is read from ARCHITECTURE.md itself, so the doc and this test cannot drift apart.
//!
//! Production code only: `#[cfg(test)]` items and the `tests.rs` / `*_tests.rs` files they
//! load are skipped (a unit test may reach anywhere). An import is any `crate::<layer>` path
//! (in `use` or inline, `crate::{a, b}` groups too) or a `super::` path that climbs to the
//! crate root; comments and string literals are not code. A path through the crate root's
//! re-exports (`crate::adapter::…`, `crate::Turn`) hides which layer it reaches, so it fails
//! too: name the item's home.
//!
//! The adapters' surface is held the same way: every `runway_core::` path in the production
//! code of `server/src`, `lambda/src` and `cloudflare/src` is one that ARCHITECTURE.md's "What
//! an adapter uses" table allows (the crate root's own items, the Agent API, always are), and
//! every path the table names is one an adapter uses.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One row of the table: the layers it holds (one floor) and what they may use.
#[derive(Debug)]
struct Row {
    layers: Vec<String>,
    uses: BTreeSet<String>,
}

/// The rows of ARCHITECTURE.md's "The core's layers" table, top floor first.
fn table(doc: &str) -> Result<Vec<Row>, String> {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("The core's layers"))
        .ok_or("ARCHITECTURE.md has no \"## The core's layers\" section")?;
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.trim_start().starts_with('|')) {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        let (first, last) = (cells[0].trim(), cells[cells.len() - 1].trim());
        if first == "folder" || first.starts_with("---") {
            continue;
        }
        let layers: Vec<String> = backticked(first)
            .into_iter()
            .filter(|t| t.ends_with('/') || t.ends_with(".rs"))
            .map(|t| layer_name(&t))
            .collect();
        if layers.is_empty() {
            return Err(format!("a row of the layer table names no folder: {line}"));
        }
        let uses = if last == "—" || last == "-" {
            BTreeSet::new()
        } else {
            last.split(',').map(|u| layer_name(u.trim())).collect()
        };
        rows.push(Row { layers, uses });
    }
    if rows.is_empty() {
        return Err("the layer table has no rows".into());
    }
    Ok(rows)
}

/// The `` `quoted` `` tokens of a table cell.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// `` `meter/` `` or `error.rs` as the layer's name: `meter`, `error`.
fn layer_name(token: &str) -> String {
    let t = token.trim_matches('`');
    t.strip_suffix('/')
        .or_else(|| t.strip_suffix(".rs"))
        .unwrap_or(t)
        .to_owned()
}

/// `text` with comments, string and char literals blanked out (newlines kept, so line
/// numbers still hold): what is left is code.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        if at(0) == '/' && at(1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if at(0) == '/' && at(1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if at(0) == 'r' && (at(1) == '"' || at(1) == '#') && (i == 0 || !ident(c[i - 1])) {
            // A raw string: r"…", r#"…"#.
            let hashes = c[i + 1..].iter().take_while(|&&ch| ch == '#').count();
            if c.get(i + 1 + hashes) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            i += 2 + hashes;
            while i < c.len() {
                if c[i] == '"'
                    && c[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes
                {
                    i += 1 + hashes;
                    break;
                }
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if at(0) == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                }
                i += 1;
            }
            i += 1;
        } else if at(0) == '\'' && (at(1) == '\\' || (at(2) == '\'' && at(1) != '\'')) {
            // A char literal ('x', '\n', '\u{7f}'); a lifetime ('a) is code.
            i += 1;
            while i < c.len() && c[i] != '\'' {
                if c[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// `code` without its `#[cfg(test)]` items (a module block, or a one-line `mod tests;` or
/// `use`), lines kept as blank lines.
fn without_tests(code: &str) -> Vec<String> {
    let lines: Vec<&str> = code.lines().collect();
    let mut kept = vec![String::new(); lines.len()];
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            kept[i] = lines[i].to_owned();
            i += 1;
            continue;
        }
        // Skip the item the attribute gates: to its `;` or to its block's closing brace.
        i += 1;
        let mut depth = 0i32;
        let mut opened = false;
        while i < lines.len() {
            for ch in lines[i].chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            let ended = if opened {
                depth <= 0
            } else {
                lines[i].trim_end().ends_with(';')
            };
            i += 1;
            if ended {
                break;
            }
        }
    }
    kept
}

/// The crate-root names `code` (of the module at `module`, e.g. `["wire", "console",
/// "writer"]`) reaches, with each one's line (1-based).
fn root_names(module: &[String], lines: &[String]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let b = line.as_bytes();
        let boundary =
            |at: usize| at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        let mut i = 0;
        while i < b.len() {
            let rest = &line[i..];
            if rest.starts_with("crate::") && boundary(i) {
                let after = &rest["crate::".len()..];
                if let Some(group) = after.strip_prefix('{') {
                    found.extend(group_heads(group).into_iter().map(|h| (n + 1, h)));
                } else {
                    found.push((n + 1, head(after)));
                }
                i += "crate::".len();
            } else if rest.starts_with("super::") && boundary(i) {
                let mut climbed = 0;
                let mut after = rest;
                while let Some(r) = after.strip_prefix("super::") {
                    climbed += 1;
                    after = r;
                }
                // `mod.rs` is its folder's module; any other file a module inside it.
                if climbed >= module.len() {
                    found.push((n + 1, head(after)));
                }
                i += rest.len() - after.len();
            } else {
                i += rest.chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    found.retain(|(_, name)| !name.is_empty() && name != "self");
    found
}

/// The first path segment of `path`.
fn head(path: &str) -> String {
    path.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The first segment of each path of a `{a::b, c}` group (`group` starts after the `{`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut start = true;
    for (i, ch) in group.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => start = true,
            c if start && !c.is_whitespace() => {
                heads.push(head(&group[i..]));
                start = false;
            }
            _ => {}
        }
    }
    heads
}

/// Every production `.rs` file of `src` but `lib.rs`, with its module path.
fn sources(src: &Path) -> Vec<(PathBuf, Vec<String>)> {
    fn walk(dir: &Path, module: &[String], out: &mut Vec<(PathBuf, Vec<String>)>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("read core/src")
            .map(|e| e.expect("read core/src").path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                let mut inner = module.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                if stem == "tests"
                    || stem.ends_with("_tests")
                    || (module.is_empty() && stem == "lib")
                {
                    continue;
                }
                let mut m = module.to_vec();
                if stem != "mod" {
                    m.push(stem.to_owned());
                }
                out.push((path, m));
            }
        }
    }
    let mut out = Vec::new();
    walk(src, &[], &mut out);
    out
}

#[test]
fn every_layer_imports_only_what_the_table_allows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc =
        std::fs::read_to_string(root.join("../ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let rows = table(&doc).unwrap_or_else(|e| panic!("{e}"));
    let floor: BTreeMap<&str, usize> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.layers.iter().map(move |l| (l.as_str(), i)))
        .collect();
    let mut problems = String::new();

    // The table itself: every use names a layer on a lower row.
    for row in &rows {
        for used in &row.uses {
            match floor.get(used.as_str()) {
                None => writeln!(
                    problems,
                    "the table: {:?} use `{used}`, which is no row",
                    row.layers
                ),
                Some(&f) if f <= floor[row.layers[0].as_str()] => writeln!(
                    problems,
                    "the table: {:?} use `{used}`, which is not on a lower row",
                    row.layers
                ),
                Some(_) => Ok(()),
            }
            .unwrap();
        }
    }

    let mut used: BTreeSet<(String, String)> = BTreeSet::new();
    for (path, module) in sources(&root.join("src")) {
        let layer = module[0].clone();
        let rel = path.strip_prefix(root).unwrap().display().to_string();
        let Some(&row) = floor.get(layer.as_str()) else {
            writeln!(
                problems,
                "core/{rel}: layer `{layer}` has no row in ARCHITECTURE.md's table"
            )
            .unwrap();
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("read a source file");
        let code = code_only(&text);
        let lines = without_tests(&code);
        for (n, name) in root_names(&module, &lines) {
            if name == layer {
                continue;
            }
            let line = text.lines().nth(n - 1).unwrap_or("").trim();
            if !floor.contains_key(name.as_str()) {
                writeln!(
                    problems,
                    "core/{rel}:{n}: `crate::{name}` goes through the crate root, not a layer: name the item's home ({line})"
                )
                .unwrap();
            } else if !rows[row].uses.contains(&name) {
                writeln!(
                    problems,
                    "core/{rel}:{n}: {layer} imports {name}, which the table does not allow ({layer} uses: {:?}): {line}",
                    rows[row].uses
                )
                .unwrap();
            } else {
                used.insert((layer.clone(), name));
            }
        }
    }

    // The table says no more than the code does.
    for row in &rows {
        for u in &row.uses {
            if !row
                .layers
                .iter()
                .any(|l| used.contains(&(l.clone(), u.clone())))
            {
                writeln!(
                    problems,
                    "the table says {:?} use `{u}`, but no file of theirs does: take it out",
                    row.layers
                )
                .unwrap();
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the core's layers are not as ARCHITECTURE.md says:\n{problems}"
    );
}

fn scan(module: &[&str], text: &str) -> Vec<(usize, String)> {
    let module: Vec<String> = module.iter().map(|s| (*s).to_owned()).collect();
    root_names(&module, &without_tests(&code_only(text)))
}

#[test]
fn the_scanner_finds_imports_and_skips_what_is_not_code() {
    let text = r##"
//! See [`crate::turn::Driver`].
use crate::meter::TurnUsage;
use crate::{protocol::Interrupt, wire::{Ending, writer}};
use super::super::store::TurnStore;
use super::Sibling;
fn f<'a>(x: &'a str) -> char { let _ = "crate::service"; let _ = r#"crate::service"#; '{' }
/* crate::service */
#[cfg(test)]
mod tests {
    use crate::testing::TestTurn;
    fn g() -> char { '}' }
}
#[cfg(test)]
mod more_tests;
pub(crate) fn h() -> crate::error::StoreError { todo!() }
"##;
    let names: Vec<String> = scan(&["agent", "turn"], text)
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(names, ["meter", "protocol", "wire", "store", "error"]);
    // From a folder's `mod.rs`, one `super::` is the crate root.
    assert_eq!(
        scan(&["agent"], "use super::meter::X;"),
        [(1, "meter".to_owned())]
    );
}

#[test]
fn the_table_is_read_with_its_floors_and_uses() {
    let doc = "# A\n\n## The core's layers\n\n| folder | holds | uses |\n|---|---|---|\n\
               | `testing/` (feature `testing`) | the kit | service, `turn` |\n\
               | `protocol/`, `http_client/` | data | platform |\n\
               | `platform/`, `error.rs` | ground | — |\n\n## Next\n| x | y | z |\n";
    let rows = table(doc).unwrap();
    let layers: Vec<&[String]> = rows.iter().map(|r| r.layers.as_slice()).collect();
    assert_eq!(
        layers,
        [
            &["testing".to_owned()][..],
            &["protocol".into(), "http_client".into()],
            &["platform".into(), "error".into()]
        ]
    );
    assert_eq!(
        rows[0].uses,
        BTreeSet::from(["service".to_owned(), "turn".to_owned()])
    );
    assert!(rows[2].uses.is_empty());
}

/// The allowed paths of ARCHITECTURE.md's "What an adapter uses" table: each row's
/// backticked paths (below `runway_core::`), in the order of the rows.
fn adapter_table(doc: &str) -> Result<Vec<Vec<String>>, String> {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("What an adapter uses"))
        .ok_or("ARCHITECTURE.md has no \"## What an adapter uses\" section")?;
    let rows: Vec<Vec<String>> = section
        .lines()
        .filter(|l| l.trim_start().starts_with('|'))
        .map(|l| l.trim().trim_matches('|').split('|').next().unwrap_or(""))
        .filter(|first| !first.trim().starts_with("path") && !first.trim().starts_with("---"))
        .map(|first| {
            backticked(first)
                .into_iter()
                // Lower-case paths into modules; a capitalised name is an example of a row
                // about the crate root's own items.
                .filter(|t| t.starts_with(|c: char| c.is_ascii_lowercase()))
                .collect()
        })
        .collect();
    if rows.iter().all(Vec::is_empty) {
        return Err("the adapter table allows no path".into());
    }
    Ok(rows)
}

/// The full paths (below `runway_core::`) that the path starting `code` names: several for a
/// `{…}` group (nested ones too), the module itself for `self`, none of an `as` rename.
fn core_paths(code: &str) -> Vec<String> {
    fn ident(rest: &str) -> &str {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        &rest[..end]
    }
    /// Reads one path (maybe a group) from `rest` onto `prefix`, leaving `rest` after it.
    fn one(rest: &mut &str, prefix: &str, out: &mut Vec<String>) {
        let mut path = prefix.to_owned();
        let mut named = false;
        loop {
            *rest = rest.trim_start();
            if let Some(group) = rest.strip_prefix('{') {
                *rest = group;
                loop {
                    *rest = rest.trim_start();
                    if let Some(r) = rest.strip_prefix('}') {
                        *rest = r;
                        return;
                    }
                    if rest.is_empty() {
                        return;
                    }
                    one(rest, &path, out);
                    *rest = rest.trim_start();
                    if let Some(r) = rest.strip_prefix(',') {
                        *rest = r;
                    } else if !rest.starts_with('}') {
                        return;
                    }
                }
            }
            let name = ident(rest);
            if name.is_empty() {
                break;
            }
            *rest = &rest[name.len()..];
            named = true;
            if name != "self" {
                if !path.is_empty() {
                    path.push_str("::");
                }
                path.push_str(name);
            }
            match rest.strip_prefix("::") {
                Some(r) => *rest = r,
                None => break,
            }
        }
        // `X as Y`: the path is X.
        let after = rest.trim_start();
        if let Some(r) = after.strip_prefix("as ") {
            let r = r.trim_start();
            *rest = &r[ident(r).len()..];
        }
        if named && !path.is_empty() {
            out.push(path);
        }
    }
    let mut rest = code;
    let mut out = Vec::new();
    one(&mut rest, "", &mut out);
    out
}

/// Every `runway_core::` path in `lines` (code only), with its line (1-based).
fn core_uses(lines: &[String]) -> Vec<(usize, String)> {
    let code = lines.join("\n");
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("runway_core::") {
        let at = from + at;
        from = at + "runway_core::".len();
        let b = code.as_bytes();
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        found.extend(core_paths(&code[from..]).into_iter().map(|p| (line, p)));
    }
    found
}

/// The crate's public modules, from `lib.rs` (`pub mod name;` or `pub mod name {`).
fn public_modules(lib: &str) -> BTreeSet<String> {
    code_only(lib)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(head)
        .collect()
}

/// Every production `.rs` file below `dir`: no `tests.rs` or `*_tests.rs`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("read a source folder").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if let Some(stem) = path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .strip_suffix(".rs")
            && stem != "tests"
            && !stem.ends_with("_tests")
        {
            out.push(path);
        }
    }
    out
}

/// What an adapter's production code reaches in the core and the table does not allow, and
/// the rows no adapter uses.
fn adapter_surface_problems(
    root: &Path,
    rows: &[Vec<String>],
    modules: &BTreeSet<String>,
    extra: Option<(&str, &str)>,
) -> String {
    let allowed = |path: &str| {
        rows.iter().flatten().find(|a| {
            path == a.as_str()
                || path
                    .strip_prefix(a.as_str())
                    .is_some_and(|r| r.starts_with("::"))
        })
    };
    let mut problems = String::new();
    let mut used: BTreeSet<&String> = BTreeSet::new();
    let mut check = |rel: &str, text: &str| {
        let lines = without_tests(&code_only(text));
        for (n, path) in core_uses(&lines) {
            if !modules.contains(&head(&path)) {
                continue; // The crate root's own items: the Agent API.
            }
            match allowed(&path) {
                Some(a) => {
                    used.insert(a);
                }
                None => writeln!(
                    problems,
                    "{rel}:{n}: `runway_core::{path}` is not a path ARCHITECTURE.md's \"What an adapter uses\" allows"
                )
                .unwrap(),
            }
        }
    };
    for adapter in ["server", "lambda", "cloudflare"] {
        for path in rust_files(&root.join("..").join(adapter).join("src")) {
            let text = std::fs::read_to_string(&path).expect("read an adapter's source");
            let rel = path.strip_prefix(root.join("..")).unwrap().display();
            check(&rel.to_string(), &text);
        }
    }
    if let Some((rel, text)) = extra {
        check(rel, text);
    }
    for a in rows.iter().flatten() {
        if !used.contains(a) {
            writeln!(
                problems,
                "the adapter table allows `{a}`, but no adapter uses it: take it out"
            )
            .unwrap();
        }
    }
    problems
}

fn adapter_surface(extra: Option<(&str, &str)>) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc =
        std::fs::read_to_string(root.join("../ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let rows = adapter_table(&doc).unwrap_or_else(|e| panic!("{e}"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("read core/src/lib.rs");
    adapter_surface_problems(root, &rows, &public_modules(&lib), extra)
}

#[test]
fn adapters_use_only_the_paths_the_table_allows() {
    let problems = adapter_surface(None);
    assert!(
        problems.is_empty(),
        "the adapters reach into the core beyond ARCHITECTURE.md's \"What an adapter uses\":\n{problems}"
    );
}

#[test]
fn an_adapter_reaching_past_the_table_is_caught() {
    let reaching = "use runway_core::adapter::Runway;\n\
                    use runway_core::store::{tally::Tally, memory::MemoryStore};\n\
                    #[cfg(test)]\nmod tests { use runway_core::store::conformance::run_all; }\n";
    let problems = adapter_surface(Some(("server/src/reaching.rs", reaching)));
    assert_eq!(
        problems,
        "server/src/reaching.rs:2: `runway_core::store::memory::MemoryStore` is not a path \
         ARCHITECTURE.md's \"What an adapter uses\" allows\n"
    );
}

#[test]
fn core_paths_expand_groups_self_and_renames() {
    let paths = |code: &str| {
        core_uses(&[code.to_owned()])
            .into_iter()
            .map(|(_, p)| p)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        paths("use runway_core::{Agent, store::{self, tally::{Tally, TurnTake}}, meter as m};"),
        [
            "Agent",
            "store",
            "store::tally::Tally",
            "store::tally::TurnTake",
            "meter"
        ]
    );
    assert_eq!(
        paths("let w = runway_core::Workers::new(); my_runway_core::x::Y;"),
        ["Workers::new"]
    );
    assert_eq!(
        paths("use runway_core::adapter::{\n    A,\n    B,\n};"),
        ["adapter::A", "adapter::B"]
    );
    assert_eq!(
        public_modules("pub mod a;\nmod b;\n#[cfg(x)]\npub mod c;\npub mod d {\n}"),
        BTreeSet::from(["a".to_owned(), "c".to_owned(), "d".to_owned()])
    );
}
