//! The processes ecp starts, and how they end.
//!
//! - A check's target ([`own_group`], [`Group`]) is someone else's code: it
//!   runs in a process group of its own, and when its session ends (closed,
//!   dropped, or the run stopped by Ctrl-C) the whole group is killed, with
//!   every descendant ecp can see on Linux: those that left the group
//!   (`setsid`) are found through `/proc`, and those whose parent already
//!   died are adopted by ecp (a child subreaper) and killed when the run
//!   ends. Nothing a target starts outlives the run.
//! - The tools a command runs and waits for (cargo, npm; [`spawn`],
//!   [`Child`]) run in a process group of their own too, listed while they
//!   run. Once [`watch_interrupts`] was called, the first Ctrl-C (or
//!   SIGTERM) kills every listed group with its descendants and sets
//!   [`interrupted`]: the command sees its tool fail, asks, and returns its
//!   own "interrupted" error through the usual exit, so temporary files are
//!   removed by their owners and nothing half-written is published. A
//!   second Ctrl-C exits at once (130).

use std::{
    collections::BTreeSet,
    sync::{
        Mutex, OnceLock,
        atomic::{AtomicBool, Ordering},
    },
};

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
pub fn kill_tree(leader: u32) {
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

/// The leaders of the groups [`spawn`] started that are still running.
static RUNNING: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
/// Set by the first Ctrl-C once [`watch_interrupts`] was called.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn running() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    RUNNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a Ctrl-C (or SIGTERM) arrived since [`watch_interrupts`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Takes Ctrl-C and SIGTERM from here on (once per process; later calls do
/// nothing): the first kills every group [`spawn`] started that still runs
/// and sets [`interrupted`], a second exits with 130 at once. Without this
/// call a Ctrl-C ends ecp the default way.
pub fn watch_interrupts() {
    static WATCHING: OnceLock<()> = OnceLock::new();
    WATCHING.get_or_init(|| {
        let (ready, armed) = std::sync::mpsc::channel();
        let started = std::thread::Builder::new()
            .name("ecp-interrupts".into())
            .spawn(move || watch(ready));
        // Wait until the handlers are in place, so that a signal sent right
        // after this call is already ours.
        if started.is_ok() {
            let _ = armed.recv();
        }
    });
}

fn watch(ready: std::sync::mpsc::Sender<()>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async move {
        // Unix handlers are in place as soon as they are made.
        #[cfg(unix)]
        let (mut interrupt, mut terminate) = {
            use tokio::signal::unix::{SignalKind, signal};
            (
                signal(SignalKind::interrupt()).ok(),
                signal(SignalKind::terminate()).ok(),
            )
        };
        let _ = ready.send(());
        loop {
            #[cfg(unix)]
            {
                let (Some(interrupt), Some(terminate)) = (interrupt.as_mut(), terminate.as_mut())
                else {
                    return;
                };
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            #[cfg(not(unix))]
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                eprintln!("ecp: interrupted again: stopped at once");
                std::process::exit(130);
            }
            let leaders: Vec<u32> = running().iter().copied().collect();
            for leader in leaders {
                kill_tree(leader);
            }
        }
    });
}

/// A tool started by [`spawn`]: its group is listed until it is waited
/// for, and killed (with its descendants) if it is dropped still running.
#[derive(Debug)]
pub struct Child {
    inner: std::process::Child,
    leader: u32,
    waited: bool,
}

/// Starts `command` in a process group of its own, listed for
/// [`watch_interrupts`]. A Ctrl-C that arrived before the start kills it at
/// once.
pub fn spawn(command: &mut std::process::Command) -> std::io::Result<Child> {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(command, 0);
    let mut list = running();
    let inner = command.spawn()?;
    let leader = inner.id();
    list.insert(leader);
    drop(list);
    if interrupted() {
        kill_tree(leader);
    }
    Ok(Child {
        inner,
        leader,
        waited: false,
    })
}

impl Child {
    /// The child's standard output, when it was piped.
    pub fn stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.inner.stdout.take()
    }

    /// Waits for the child to end, then drops it from the list.
    pub fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        let status = self.inner.wait();
        self.waited = true;
        running().remove(&self.leader);
        status
    }

    /// Waits for the child, collecting its piped stdout and stderr.
    pub fn wait_with_output(mut self) -> std::io::Result<std::process::Output> {
        let mut stdout = self.inner.stdout.take();
        let mut stderr = self.inner.stderr.take();
        // stderr on its own thread, so that neither pipe fills up.
        let errors = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(stderr) = stderr.as_mut() {
                let _ = std::io::Read::read_to_end(stderr, &mut bytes);
            }
            bytes
        });
        let mut out = Vec::new();
        if let Some(stdout) = stdout.as_mut() {
            std::io::Read::read_to_end(stdout, &mut out)?;
        }
        let err = errors.join().unwrap_or_default();
        let status = self.wait()?;
        Ok(std::process::Output {
            status,
            stdout: out,
            stderr: err,
        })
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.waited {
            kill_tree(self.leader);
            let _ = self.inner.wait();
            running().remove(&self.leader);
        }
    }
}
