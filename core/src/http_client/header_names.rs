//! Requests and responses show their headers' names only, never their values (a credential,
//! a signed URL), in `Debug` output and so in logs.

use std::fmt;

/// Header names only, for `Debug` output.
pub(crate) struct HeaderNames<'a>(pub(crate) &'a http::HeaderMap);

impl fmt::Debug for HeaderNames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}
