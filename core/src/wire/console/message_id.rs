//! The ids runway gives the messages it opens: `m{n}` in the run, `m{n}.{run tag}` in the
//! AG-UI dialect (unique in the thread), kept inline so naming one in a frame allocates nothing.

/// [`run_tag`](crate::protocol::agui::run_tag) of a run, kept inline.
#[derive(Debug, Clone, Copy)]
pub(super) struct RunTag(pub(super) [u8; 12]);

/// A message id runway makes, `m{n}` (in the AG-UI dialect `m{n}.{run tag}`), kept inline
/// (`Copy`): naming it in a frame allocates nothing.
#[derive(Debug, Clone, Copy)]
pub(super) struct MessageId {
    buf: [u8; 24],
    len: u8,
}

impl MessageId {
    /// `m{n}.{tag}`: unique in the thread, where `m{n}` is unique in the run only.
    pub(super) fn tagged(n: u32, tag: &RunTag) -> Self {
        let mut id = Self::new(n);
        let at = usize::from(id.len);
        id.buf[at] = b'.';
        id.buf[at + 1..at + 1 + tag.0.len()].copy_from_slice(&tag.0);
        id.len += 1 + tag.0.len() as u8;
        id
    }

    pub(super) fn new(n: u32) -> Self {
        let mut buf = [0u8; 24];
        buf[0] = b'm';
        let mut len = 1;
        let mut digits = [0u8; 10];
        let mut count = 0;
        let mut rest = n;
        loop {
            digits[count] = b'0' + (rest % 10) as u8;
            count += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        for d in digits[..count].iter().rev() {
            buf[len] = *d;
            len += 1;
        }
        Self {
            buf,
            len: len as u8,
        }
    }

    pub(super) fn as_str(&self) -> &str {
        // Only ASCII (digits after `m`, then a dot and hex digits) is ever stored.
        std::str::from_utf8(&self.buf[..usize::from(self.len)]).unwrap_or("m")
    }
}
