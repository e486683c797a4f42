//! The processes a check starts, and how they end: every target runs in a
//! process group of its own, and when its session ends (closed, dropped, or
//! the run stopped by Ctrl-C) the whole group is killed, with every
//! descendant ecp can see on Linux: those that left the group (`setsid`)
//! are found through `/proc`, and those whose parent already died are
//! adopted by ecp (a child subreaper) and killed when the run ends.
//!
//! A target is someone else's code: nothing it starts outlives the run.

use std::collections::BTreeSet;

/// Makes `command` start a process group of its own (its pid is the
/// group's id), so that the group can be killed whole.
pub fn own_group(command: &mut tokio::process::Command) {
    #[cfg(unix)]
    command.process_group(0);
    #[cfg(not(unix))]
    let _ = command;
}

/// Makes ecp the parent of any orphaned descendant of the processes it
/// starts (Linux), so that [`kill_adopted`] can end them. Call once, before
/// the first target starts.
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

/// A target's process group, killed with its visible descendants when
/// dropped.
#[derive(Debug)]
pub struct Group {
    leader: u32,
}

impl Group {
    /// The group led by the process `leader` (started with [`own_group`]).
    pub fn new(leader: u32) -> Group {
        Group { leader }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        kill_tree(self.leader);
    }
}

/// The pid and parent pid of every process in `/proc` (Linux).
#[cfg(target_os = "linux")]
fn processes() -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // "pid (comm) state ppid ...": comm may hold spaces and ')'.
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid = after.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// Every descendant of `root` that `/proc` shows (Linux).
#[cfg(target_os = "linux")]
fn descendants(root: u32) -> BTreeSet<u32> {
    let all = processes();
    let mut found = BTreeSet::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid) in &all {
            if ppid == parent && pid != root && found.insert(pid) {
                frontier.push(pid);
            }
        }
    }
    found
}

#[cfg(not(target_os = "linux"))]
fn descendants(_root: u32) -> BTreeSet<u32> {
    BTreeSet::new()
}

/// Kills the group led by `leader` and every descendant of the leader.
fn kill_tree(leader: u32) {
    #[cfg(unix)]
    {
        use nix::{
            sys::signal::{Signal, kill, killpg},
            unistd::Pid,
        };
        let Ok(raw) = i32::try_from(leader) else {
            return;
        };
        // Seen before the kill: afterwards they are orphans.
        let below = descendants(leader);
        let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
        for pid in below {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = leader;
}

/// Kills and reaps every process ecp adopted (the orphans of the targets
/// it ran, Linux) with their descendants. Call when no target should be
/// left running: at the end of a run, or on Ctrl-C.
pub fn kill_adopted() {
    #[cfg(target_os = "linux")]
    {
        use nix::{
            sys::{
                signal::{Signal, kill},
                wait::{WaitPidFlag, waitpid},
            },
            unistd::Pid,
        };
        let me = std::process::id();
        // A few rounds: a process killed in one round may leave children
        // that are adopted only after it died.
        for _ in 0..5 {
            let children: Vec<u32> = processes()
                .into_iter()
                .filter(|&(_, ppid)| ppid == me)
                .map(|(pid, _)| pid)
                .collect();
            if children.is_empty() {
                break;
            }
            for child in children {
                let Ok(raw) = i32::try_from(child) else {
                    continue;
                };
                for below in descendants(child) {
                    if let Ok(below) = i32::try_from(below) {
                        let _ = kill(Pid::from_raw(below), Signal::SIGKILL);
                    }
                }
                let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
                let _ = waitpid(Pid::from_raw(raw), Some(WaitPidFlag::empty()));
            }
        }
    }
}
