//! The page's files, embedded in the binary so the playground works offline.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("page/index.html");
const STYLE: &str = include_str!("page/app.css");

/// The page's script: ES modules by job, served as they are under `/playground/{name}` (no build
/// step); `app.js` is the one `index.html` loads, and it imports the rest.
pub const MODULES: &[(&str, &str)] = &[
    ("agui.js", include_str!("page/agui.js")),
    ("app.js", include_str!("page/app.js")),
    ("cards.js", include_str!("page/cards.js")),
    ("dom.js", include_str!("page/dom.js")),
    ("format.js", include_str!("page/format.js")),
    ("frames.js", include_str!("page/frames.js")),
    ("ids.js", include_str!("page/ids.js")),
    ("inspector.js", include_str!("page/inspector.js")),
    ("page_state.js", include_str!("page/page_state.js")),
    ("player.js", include_str!("page/player.js")),
    ("sse.js", include_str!("page/sse.js")),
    ("tally.js", include_str!("page/tally.js")),
    ("test_result.js", include_str!("page/test_result.js")),
    ("threads.js", include_str!("page/threads.js")),
    ("urls.js", include_str!("page/urls.js")),
    ("usage_meter.js", include_str!("page/usage_meter.js")),
    ("usage_view.js", include_str!("page/usage_view.js")),
];

/// Everything the page loads comes from its own origin; it talks only to its own origin.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// `GET /`: the chat page.
pub async fn index() -> Response {
    asset(INDEX, "text/html; charset=utf-8")
}

/// `GET /playground/{name}` for one of [`MODULES`].
pub fn script(source: &'static str) -> Response {
    asset(source, "text/javascript; charset=utf-8")
}

/// `GET /playground/app.css`.
pub async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

#[cfg(test)]
mod tests {
    use super::MODULES;
    use std::collections::BTreeSet;

    /// The relative modules `source` imports: `import … from "./name.js";`.
    fn imports(source: &str) -> Vec<&str> {
        source
            .lines()
            .filter(|l| l.starts_with("import "))
            .filter_map(|l| l.split("from \"./").nth(1))
            .filter_map(|rest| rest.split('"').next())
            .collect()
    }

    /// Every script in the page's folder is served, every import names a served module, and every
    /// served module is reached from `app.js`: a module added, renamed or left over is caught here,
    /// not by a browser finding a 404.
    #[test]
    fn the_served_modules_are_the_folders_scripts_all_reached_from_app_js() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/playground/page");
        let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".js"))
            .collect();
        let served: BTreeSet<String> = MODULES.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(on_disk, served);

        let source = |name: &str| MODULES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s);
        let mut reached = BTreeSet::from(["app.js".to_owned()]);
        let mut todo = vec!["app.js"];
        while let Some(name) = todo.pop() {
            for dep in imports(source(name).unwrap()) {
                assert!(
                    source(dep).is_some(),
                    "{name} imports {dep}, which is not served"
                );
                if reached.insert(dep.to_owned()) {
                    todo.push(MODULES.iter().find(|(n, _)| *n == dep).unwrap().0);
                }
            }
        }
        assert_eq!(reached, served, "modules no import reaches");
    }
}
