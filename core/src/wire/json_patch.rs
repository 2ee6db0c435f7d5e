//! JSON Patch (RFC 6902, over RFC 6901 pointers) as an AG-UI client applies a `STATE_DELTA`:
//! the AG-UI dialect of the frame writer follows the state its client holds, so the
//! `STATE_SNAPSHOT` it sends before an interrupt is the state the client would have
//! (`wire/console/client_view.rs`). The client applies a patch whole or not at all
//! (`fast-json-patch`'s `applyPatch` with validation: on an error its state stays as it was);
//! [`apply`] patches in place, without copying the document, and on an error leaves it partly
//! patched: the caller then knows the client's state no longer (`ClientView` stops sending it).

use serde_json::Value;

/// Why a patch did not apply (the operation's index and what was wrong).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PatchError(pub String);

/// Applies `patch` (an array of operations) to `doc`, in place.
///
/// # Errors
/// A [`PatchError`] when `patch` is not an array of valid operations, a path does not resolve,
/// or a `test` fails; `doc` is then partly patched (the operations before the failing one).
pub(crate) fn apply(doc: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let ops = patch
        .as_array()
        .ok_or_else(|| PatchError("a patch is an array".into()))?;
    for (i, op) in ops.iter().enumerate() {
        apply_one(doc, op).map_err(|e| PatchError(format!("operation {i}: {e}")))?;
    }
    Ok(())
}

fn apply_one(doc: &mut Value, op: &Value) -> Result<(), String> {
    let kind = op.get("op").and_then(Value::as_str).ok_or("no op")?;
    let path = op.get("path").and_then(Value::as_str).ok_or("no path")?;
    let value = || op.get("value").cloned().ok_or("no value");
    let from = || op.get("from").and_then(Value::as_str).ok_or("no from");
    match kind {
        "add" => add(doc, path, value()?),
        "remove" => remove(doc, path).map(drop),
        "replace" => {
            let v = value()?;
            *pointer_mut(doc, path)? = v;
            Ok(())
        }
        "move" => {
            let from = from()?;
            if path != from && path.starts_with(&format!("{from}/")) {
                return Err("cannot move a value into itself".into());
            }
            let v = remove(doc, from)?;
            add(doc, path, v)
        }
        "copy" => {
            let v = pointer(doc, from()?)?.clone();
            add(doc, path, v)
        }
        "test" => (*pointer(doc, path)? == value()?)
            .then_some(())
            .ok_or_else(|| format!("test failed at {path}")),
        other => Err(format!("unknown op {other}")),
    }
}

/// The pointer's tokens, unescaped (`~1` is `/`, `~0` is `~`).
fn tokens(path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| format!("{path} is not a JSON pointer"))?;
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn index(token: &str, len: usize, append: bool) -> Result<usize, String> {
    if append && token == "-" {
        return Ok(len);
    }
    let bad = || format!("bad array index {token}");
    if token.is_empty() || (token.len() > 1 && token.starts_with('0')) {
        return Err(bad());
    }
    let i: usize = token.parse().map_err(|_| bad())?;
    let limit = if append { len } else { len.saturating_sub(1) };
    if i > limit || (!append && len == 0) {
        return Err(format!("index {i} out of bounds"));
    }
    Ok(i)
}

fn pointer<'v>(doc: &'v Value, path: &str) -> Result<&'v Value, String> {
    let mut at = doc;
    for t in tokens(path)? {
        at = match at {
            Value::Object(map) => map.get(&t),
            Value::Array(items) => items.get(index(&t, items.len(), false)?),
            _ => None,
        }
        .ok_or_else(|| format!("{path} does not exist"))?;
    }
    Ok(at)
}

fn pointer_mut<'v>(doc: &'v mut Value, path: &str) -> Result<&'v mut Value, String> {
    let mut at = doc;
    for t in tokens(path)? {
        at = match at {
            Value::Object(map) => map.get_mut(&t),
            Value::Array(items) => {
                let i = index(&t, items.len(), false)?;
                items.get_mut(i)
            }
            _ => None,
        }
        .ok_or_else(|| format!("{path} does not exist"))?;
    }
    Ok(at)
}

/// The parent of `path` and its last token; `None` for the root.
fn split(path: &str) -> Result<Option<(String, String)>, String> {
    let mut t = tokens(path)?;
    let Some(last) = t.pop() else {
        return Ok(None);
    };
    let parent = t
        .iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect();
    Ok(Some((parent, last)))
}

fn add(doc: &mut Value, path: &str, v: Value) -> Result<(), String> {
    let Some((parent, last)) = split(path)? else {
        *doc = v;
        return Ok(());
    };
    match pointer_mut(doc, &parent)? {
        Value::Object(map) => {
            map.insert(last, v);
            Ok(())
        }
        Value::Array(items) => {
            let i = index(&last, items.len(), true)?;
            items.insert(i, v);
            Ok(())
        }
        _ => Err(format!("the parent of {path} is not a container")),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let Some((parent, last)) = split(path)? else {
        return Ok(std::mem::take(doc));
    };
    match pointer_mut(doc, &parent)? {
        Value::Object(map) => map
            .remove(&last)
            .ok_or_else(|| format!("{path} does not exist")),
        Value::Array(items) => {
            let i = index(&last, items.len(), false)?;
            Ok(items.remove(i))
        }
        _ => Err(format!("the parent of {path} is not a container")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_rfcs_operations_apply() {
        let mut doc = json!({"todos": [{"t": "a"}], "n": 1, "a/b": {"~x": 0}});
        let patch = json!([
            {"op": "add", "path": "/todos/-", "value": {"t": "b"}},
            {"op": "add", "path": "/todos/0", "value": {"t": "z"}},
            {"op": "replace", "path": "/n", "value": 2},
            {"op": "remove", "path": "/todos/1"},
            {"op": "copy", "from": "/n", "path": "/m"},
            {"op": "move", "from": "/a~1b/~0x", "path": "/moved"},
            {"op": "test", "path": "/m", "value": 2}
        ]);
        apply(&mut doc, &patch).unwrap();
        assert_eq!(
            doc,
            json!({"todos": [{"t": "z"}, {"t": "b"}], "n": 2, "m": 2, "a/b": {}, "moved": 0})
        );
        apply(&mut doc, &json!([{"op": "add", "path": "", "value": [1]}])).unwrap();
        assert_eq!(doc, json!([1]));
    }

    #[test]
    fn a_patch_that_does_not_apply_is_an_error() {
        let doc = json!({"n": 1});
        for bad in [
            json!([{"op": "replace", "path": "/n", "value": 2}, {"op": "remove", "path": "/x"}]),
            json!([{"op": "test", "path": "/n", "value": 9}]),
            json!([{"op": "add", "path": "/n/deep", "value": 1}]),
            json!([{"op": "add", "path": "/a/b", "value": 1}]),
            json!([{"op": "jump", "path": "/n"}]),
            json!([{"op": "add", "path": "n", "value": 1}]),
            json!([{"op": "move", "from": "", "path": "/n/x"}]),
            json!({"op": "add"}),
        ] {
            assert!(apply(&mut doc.clone(), &bad).is_err(), "{bad}");
        }
        let list = json!([1, 2]);
        for bad in ["/2", "/01", "/-"] {
            let patch = json!([{"op": "replace", "path": bad, "value": 0}]);
            assert!(apply(&mut list.clone(), &patch).is_err(), "{bad}");
        }
        let past_end = json!([{"op": "add", "path": "/3", "value": 0}]);
        assert!(apply(&mut list.clone(), &past_end).is_err());
    }
}
