//! Readings from Linux's /proc: a process's CPU time and peak RSS, and the system's
//! listen-queue overflow counter (what `nstat` shows as `TcpExtListenOverflows`).

/// Clock ticks per second in /proc's CPU times (`USER_HZ`, 100 on every Linux architecture
/// runway runs on).
const USER_HZ: u64 = 100;

/// A process's user and system CPU time.
#[derive(Debug, Clone, Copy)]
pub struct CpuTime {
    pub user_ms: u64,
    pub system_ms: u64,
}

impl CpuTime {
    pub fn total_ms(&self) -> u64 {
        self.user_ms + self.system_ms
    }
}

/// CPU time of a process so far, threads that already exited included.
pub struct ProcessCpu(CpuTime);

impl ProcessCpu {
    pub fn read(pid: u32) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    pub fn read_self() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/self/stat").ok()?)
    }

    fn parse(stat: &str) -> Option<Self> {
        // Fields after the command name (which may hold spaces and parentheses): the 14th
        // and 15th fields of the line are utime and stime.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut fields = rest.split_whitespace().skip(11);
        let utime: u64 = fields.next()?.parse().ok()?;
        let stime: u64 = fields.next()?.parse().ok()?;
        Some(Self(CpuTime {
            user_ms: utime * 1000 / USER_HZ,
            system_ms: stime * 1000 / USER_HZ,
        }))
    }

    /// CPU used since `before`.
    pub fn since(&self, before: &Self) -> CpuTime {
        CpuTime {
            user_ms: self.0.user_ms.saturating_sub(before.0.user_ms),
            system_ms: self.0.system_ms.saturating_sub(before.0.system_ms),
        }
    }
}

/// `VmHWM` (peak resident set) of a process, in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// `TcpExt: ListenOverflows` from /proc/net/netstat (system-wide, all sockets).
pub fn listen_overflows() -> Option<u64> {
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let mut lines = netstat.lines();
    while let Some(names) = lines.next() {
        let values = lines.next()?;
        if !names.starts_with("TcpExt:") {
            continue;
        }
        let i = names
            .split_whitespace()
            .position(|n| n == "ListenOverflows")?;
        return values.split_whitespace().nth(i)?.parse().ok();
    }
    None
}

/// Raises the open-file limit so `concurrency` connections fit.
pub fn raise_fd_limit(concurrency: usize) -> Result<(), String> {
    let need = concurrency as u64 + 64;
    let (soft, hard) =
        rlimit::getrlimit(rlimit::Resource::NOFILE).map_err(|e| format!("getrlimit: {e}"))?;
    if soft >= need {
        return Ok(());
    }
    if hard < need {
        return Err(format!(
            "{concurrency} connections need {need} descriptors; the hard limit is {hard}"
        ));
    }
    rlimit::setrlimit(rlimit::Resource::NOFILE, hard, hard).map_err(|e| format!("setrlimit: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_a_command_holding_spaces() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 37 0 0 20 0 3 0 1 2 3";
        let cpu = ProcessCpu::parse(stat).expect("parsed").0;
        assert_eq!((cpu.user_ms, cpu.system_ms), (2500, 370));
    }

    #[test]
    fn reads_this_process_and_the_counter() {
        assert!(ProcessCpu::read_self().is_some());
        assert!(peak_rss_kib(std::process::id()).is_some_and(|k| k > 0));
        assert!(listen_overflows().is_some());
    }
}
