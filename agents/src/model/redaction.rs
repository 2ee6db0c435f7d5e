//! [`Redactor`]: the model agent's secrets (the API key, the HTTP tools' and MCP servers'
//! header values) taken out of every text it logs, streams to the user or hands to the model.
//! An upstream may echo a credential in an error (a 401 body, a JSON-RPC error message, a
//! tool's error page), whole or only its token; it must reach neither a log line, nor a frame,
//! nor the model provider.
//!
//! Redact first, then cut ([`Redactor::redact_and_cut`]): a cut made first can leave a secret's
//! first characters, which no longer match the whole secret. A text already cut elsewhere (a
//! body read up to a limit) has any secret's start at its end, or just before a
//! `… [truncated]` mark, taken out too.

use base64::Engine as _;

use super::settings::ModelSettings;
use super::transcript::truncate;

/// Secrets, and parts of secrets, shorter than this are not redacted: they are not
/// credentials (a header such as `X-Version: 2`, a scheme such as `Basic`), and cutting them
/// out of every text would garble it.
const MIN_SECRET_CHARS: usize = 8;
/// A secret's start this long or longer at the end of a cut text is taken out.
const MIN_CUT_PREFIX_CHARS: usize = 4;
/// What a cut text ends with ([`truncate`]'s mark).
const CUT_MARK: &str = "… [truncated]";
/// What a secret is replaced with.
const REDACTED: &str = "<redacted>";

/// Replaces each configured secret, and each token part of it, in a text with `<redacted>`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor {
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// The secrets of `settings`: the API key, and each header value of a tool or an MCP
    /// server.
    pub(crate) fn of(settings: &ModelSettings) -> Self {
        let tool_headers = settings.tools.iter().flat_map(|t| &t.headers);
        let mcp_headers = settings.mcp.iter().flat_map(|m| &m.headers);
        let values = settings
            .api_key
            .iter()
            .chain(tool_headers.chain(mcp_headers).map(|(_, v)| v))
            .map(|v| v.expose());
        Self::of_values(values)
    }

    /// The secrets `values`, each whole and by its token parts: each whitespace-separated
    /// word (`Bearer tok-123` is also echoed as `tok-123`), and for `Basic` credentials the
    /// decoded `user:password` and each side of it. Parts shorter than 8 characters are
    /// left alone.
    pub(crate) fn of_values<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        let mut secrets: Vec<String> = Vec::new();
        for v in values {
            secrets.push(v.trim().to_owned());
            let words: Vec<&str> = v.split_whitespace().collect();
            secrets.extend(words.iter().map(|w| (*w).to_owned()));
            if let [scheme, encoded] = words[..]
                && scheme.eq_ignore_ascii_case("basic")
                && let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(encoded)
                && let Ok(pair) = String::from_utf8(raw)
            {
                secrets.extend(pair.split(':').map(str::to_owned));
                secrets.push(pair);
            }
        }
        secrets.retain(|s| s.chars().count() >= MIN_SECRET_CHARS);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// These secrets and `extra` (a user's token, for what a server acting as them says).
    pub(crate) fn with(&self, extra: &str) -> Self {
        let mut secrets = self.secrets.clone();
        if extra.chars().count() >= MIN_SECRET_CHARS {
            secrets.push(extra.to_owned());
            secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
            secrets.dedup();
        }
        Self { secrets }
    }

    /// `text` with every secret replaced, and any secret's start left at the end of a cut
    /// (the end of `text`, or just before a `… [truncated]` mark).
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        if self.secrets.is_empty() {
            return out;
        }
        let mut cuts: Vec<usize> = out.match_indices(CUT_MARK).map(|(i, _)| i).collect();
        cuts.push(out.len());
        // From the last cut back, so earlier positions stay valid.
        for end in cuts.into_iter().rev() {
            if let Some(start) = self.cut_secret_start(&out[..end]) {
                out.replace_range(start..end, REDACTED);
            }
        }
        out
    }

    /// `text` redacted, then cut to at most `max` bytes on a character boundary (marked when
    /// cut). Only what can be kept is redacted: a secret reaching into the first `max` bytes
    /// ends within `max` + the longest secret, so the rest (up to 8 MiB of a tool result) is
    /// dropped unread.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn redact_and_cut(&self, text: &str, max: usize) -> String {
        let longest = self.secrets.first().map_or(0, String::len);
        let mut end = max.saturating_add(longest);
        if text.len() <= end {
            // The cut may split a `<redacted>` mark: harmless, it holds no secret.
            return truncate(&self.redact(text), max);
        }
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut out = truncate(&self.redact(&text[..end]), max);
        if !out.ends_with(CUT_MARK) {
            out.push_str(CUT_MARK);
        }
        out
    }

    /// Where the longest start (at least [`MIN_CUT_PREFIX_CHARS`] characters, not the whole)
    /// of a secret that `text` ends with begins.
    fn cut_secret_start(&self, text: &str) -> Option<usize> {
        self.secrets
            .iter()
            .filter_map(|s| {
                s.char_indices()
                    .map(|(i, _)| i)
                    .skip(MIN_CUT_PREFIX_CHARS)
                    .filter(|&i| text.ends_with(&s[..i]))
                    .max()
            })
            .max()
            .map(|len| text.len() - len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::secret::Secret;

    #[test]
    fn the_key_and_tool_header_values_are_redacted_whole_and_by_word() {
        let mut s = ModelSettings::new("http://127.0.0.1:1/v1", "m").unwrap();
        s.api_key = Some(Secret::new("sk-abcdefgh1234"));
        s.tools = crate::model::parse_tools(
            "[[tools]]\nname = \"t\"\nmethod = \"GET\"\nurl = \"http://127.0.0.1:9/x\"\n\
             headers = { Authorization = \"Bearer tok-secret-99\", X-V = \"2\" }\n",
            "t",
            &|_| None,
        )
        .unwrap()
        .tools;
        let r = Redactor::of(&s);
        assert_eq!(
            r.redact("Incorrect API key provided: sk-abcdefgh1234. Bearer tok-secret-99; tok-secret-99 v2"),
            "Incorrect API key provided: <redacted>. <redacted>; <redacted> v2"
        );
    }

    /// Issue 27: a user's token joins the configured secrets for what a server acting as
    /// them says (its tool list); the configured ones stay.
    #[test]
    fn a_users_token_is_redacted_with_the_configured_secrets() {
        let r = Redactor::of_values(["Bearer tok-secret-99"]).with("user-token-abc123");
        assert_eq!(
            r.redact("search as user-token-abc123 with tok-secret-99"),
            "search as <redacted> with <redacted>"
        );
        assert_eq!(Redactor::default().with("short").redact("short"), "short");
    }

    /// The order the MCP results were handled in before issue 25: cut, then redact.
    #[inline(never)]
    fn cut_then_redact(r: &Redactor, text: &str, max: usize) -> String {
        r.redact(&truncate(text, max))
    }

    /// A 1 MiB result with a token at the 8 KiB cut and another deep inside, under four
    /// secrets (a model key, two bearer tokens, a Basic credential): nothing of either token
    /// is left either way it is cut and redacted now. (Under callgrind it also measures what
    /// redacting before cutting costs against cutting first.)
    #[test]
    fn a_large_result_keeps_no_piece_of_a_token_at_its_cut() {
        let token = "tok-0123456789abcdef";
        let basic = base64::engine::general_purpose::STANDARD.encode("svc-user:pa55word-x");
        let r = Redactor::of_values([
            "sk-abcdefgh1234",
            format!("Bearer {token}").as_str(),
            "Bearer other-token-99887766",
            format!("Basic {basic}").as_str(),
        ]);
        let mut big = "y".repeat(8180);
        big.push_str(token);
        big.push_str(&"w".repeat(1024 * 1024));
        big.push_str(token);
        for out in [
            r.redact_and_cut(&big, 8192),
            cut_then_redact(&r, &big, 8192),
        ] {
            assert!(!out.contains("tok-0"), "{}", &out[8100..]);
            assert!(out[8100..].contains("<redacted>"), "{}", &out[8100..]);
        }
    }

    #[test]
    fn basic_credentials_are_redacted_decoded_too() {
        // "svc-user:pa55word-x" in base64.
        let encoded = base64::engine::general_purpose::STANDARD.encode("svc-user:pa55word-x");
        let r = Redactor::of_values([format!("Basic {encoded}").as_str()]);
        assert_eq!(
            r.redact(&format!(
                "denied {encoded}: user svc-user, password pa55word-x"
            )),
            "denied <redacted>: user <redacted>, password <redacted>"
        );
    }

    #[test]
    fn a_secrets_start_left_by_a_cut_is_redacted_and_cutting_comes_after_redacting() {
        let token = "tok-0123456789abcdef";
        let r = Redactor::of_values([format!("Bearer {token}").as_str()]);
        // Cut elsewhere first: the token's start before the mark, or at the very end.
        let cut = truncate(&format!("{}{token}", "x".repeat(10)), 16);
        assert_eq!(cut, "xxxxxxxxxxtok-01… [truncated]");
        assert_eq!(r.redact(&cut), "xxxxxxxxxx<redacted>… [truncated]");
        assert_eq!(r.redact("body: tok-0123"), "body: <redacted>");
        // Too short a start, or text that only looks like one, stays.
        assert_eq!(r.redact("a tok"), "a tok");
        // Redacted first: nothing of the token is left whatever the cut.
        for max in 0..80 {
            let text = format!("{}{token} and more{}", "é".repeat(5), "é".repeat(max));
            let out = r.redact_and_cut(&text, max);
            assert!(!out.contains("tok-0"), "{max}: {out}");
            assert!(out.len() <= max + CUT_MARK.len(), "{max}: {out}");
            assert!(out.ends_with(CUT_MARK), "{max}: {out}");
        }
    }
}
