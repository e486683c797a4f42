//! The open connections of the HTTP adapter: how many there are, which of
//! them wait for a request, and which one to close when a new connection
//! needs a place.
//!
//! A connection holds no request permit while it waits: it is *idle* from
//! its accept until a whole request head has arrived, and again from each
//! answer to the next head. An idle connection may be closed at any moment
//! to make room, one with a request in flight never is:
//!
//! - each peer (an IPv4 address, or an IPv6 /64) keeps at most
//!   `max_idle_per_peer` idle connections that have not carried an
//!   authorized MCP request; its next one closes its oldest;
//! - past `max_connections` open connections, a new one closes the oldest
//!   idle connection of the peer with the most idle ones: first among those
//!   that never carried an authorized request, then among the others;
//! - when every connection has a request in flight, a few more are taken
//!   for `/healthz` only ([`HEALTH_RESERVE`]), made room for the same way;
//!   past them a connection gets a `503` unread.
//!
//! So silent or slow connections, from one client or many, are closed
//! before anything else and cannot keep a health probe or a call out.

use std::{
    collections::{BTreeMap, HashMap},
    net::{IpAddr, Ipv6Addr},
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::sync::Notify;

/// Connections past `max_connections` that may still ask `/healthz` when
/// every other one has a request in flight, so that a saturated replica
/// answers its probes (with `200`, or `503` while draining) instead of
/// timing out.
pub const HEALTH_RESERVE: usize = 16;

/// The limits of [`Connections`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub max_connections: usize,
    pub health_reserve: usize,
    pub max_idle_per_peer: usize,
}

/// Where a connection sits: the main pool, or the `/healthz` reserve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pool {
    Main,
    Health,
}

/// Who a connection comes from, for the per-peer cap: an IPv4 address, or
/// the /64 of an IPv6 address (what one host usually has).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Peer(IpAddr);

impl Peer {
    fn of(ip: IpAddr) -> Peer {
        match ip.to_canonical() {
            IpAddr::V6(v6) => Peer(IpAddr::V6(Ipv6Addr::from(
                u128::from(v6) & !(u128::from(u64::MAX)),
            ))),
            v4 => Peer(v4),
        }
    }
}

/// How a new connection was taken in.
pub(super) struct Admission {
    /// `None`: every place, the reserve's too, has a request in flight.
    pub link: Option<Arc<Link>>,
    /// Idle connections closed to make room: for the peer's cap, and for
    /// the total.
    pub closed_for_peer: usize,
    pub closed_for_room: usize,
}

/// The table of open connections.
pub(super) struct Connections {
    limits: Limits,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// Connection ids and idle order, from one counter.
    next: u64,
    /// Open connections of each pool, those being closed for room left out.
    open: [usize; 2],
    entries: HashMap<u64, Entry>,
    /// Each peer's idle connections, only peers that have one.
    idle: HashMap<Peer, IdleLists>,
}

struct Entry {
    peer: Peer,
    pool: Pool,
    /// It has carried an authorized MCP request.
    known: bool,
    /// Its key in its idle list, while it is idle.
    idle_since: Option<u64>,
    /// Being closed to make room; no longer counted.
    closing: bool,
    close: Arc<Notify>,
}

/// One peer's idle connections by (pool, known): idle-since -> id, oldest
/// first.
#[derive(Default)]
struct IdleLists([BTreeMap<u64, u64>; 4]);

fn list(pool: Pool, known: bool) -> usize {
    (pool as usize) * 2 + usize::from(known)
}

impl IdleLists {
    fn is_empty(&self) -> bool {
        self.0.iter().all(BTreeMap::is_empty)
    }
}

impl Connections {
    pub(super) fn new(limits: Limits) -> Arc<Connections> {
        Arc::new(Connections {
            limits,
            table: Mutex::new(Table::default()),
        })
    }

    pub(super) fn limits(&self) -> Limits {
        self.limits
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // A panic while holding it leaves the table consistent enough to
        // go on (every change is a few map operations).
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes in a connection from `ip`, closing idle ones as the limits
    /// say.
    pub(super) fn admit(self: &Arc<Self>, ip: IpAddr) -> Admission {
        let peer = Peer::of(ip);
        let limits = self.limits;
        let mut table = self.table();
        let mut admission = Admission {
            link: None,
            closed_for_peer: 0,
            closed_for_room: 0,
        };
        // The peer's cap: the new connection is idle and unproven too.
        if let Some(lists) = table.idle.get(&peer) {
            let fresh = [list(Pool::Main, false), list(Pool::Health, false)];
            let count: usize = fresh.iter().map(|&i| lists.0[i].len()).sum();
            if count >= limits.max_idle_per_peer {
                let oldest = fresh
                    .iter()
                    .filter_map(|&i| lists.0[i].first_key_value())
                    .min()
                    .map(|(_, &id)| id);
                if let Some(id) = oldest {
                    table.close_for_room(id);
                    admission.closed_for_peer += 1;
                }
            }
        }
        let pool = if table.open[Pool::Main as usize] < limits.max_connections {
            Pool::Main
        } else if let Some(id) = table.heaviest_oldest(Pool::Main) {
            table.close_for_room(id);
            admission.closed_for_room += 1;
            Pool::Main
        } else if table.open[Pool::Health as usize] < limits.health_reserve {
            Pool::Health
        } else if let Some(id) = table.heaviest_oldest(Pool::Health) {
            table.close_for_room(id);
            admission.closed_for_room += 1;
            Pool::Health
        } else {
            return admission;
        };
        table.next += 1;
        let id = table.next;
        let close = Arc::new(Notify::new());
        table.entries.insert(
            id,
            Entry {
                peer,
                pool,
                known: false,
                idle_since: None,
                closing: false,
                close: close.clone(),
            },
        );
        table.open[pool as usize] += 1;
        table.set_idle(id);
        admission.link = Some(Arc::new(Link {
            id,
            connections: self.clone(),
            health_only: pool == Pool::Health,
            in_request: AtomicBool::new(false),
            known: AtomicBool::new(false),
            write_blocked: AtomicBool::new(false),
            close,
        }));
        admission
    }

    /// Open connections (of the main pool, of the reserve), for tests and
    /// logs.
    #[cfg(test)]
    fn open(&self) -> [usize; 2] {
        self.table().open
    }
}

impl Table {
    /// The oldest idle connection of `pool` of the peer with the most idle
    /// ones there: those that never carried an authorized request first.
    fn heaviest_oldest(&self, pool: Pool) -> Option<u64> {
        for known in [false, true] {
            let i = list(pool, known);
            let heaviest = self
                .idle
                .values()
                .filter_map(|lists| {
                    let (&since, &id) = lists.0[i].first_key_value()?;
                    // Most idle first; of equals, the one idle longest.
                    Some(((lists.0[i].len(), std::cmp::Reverse(since)), id))
                })
                .max()
                .map(|(_, id)| id);
            if heaviest.is_some() {
                return heaviest;
            }
        }
        None
    }

    fn set_idle(&mut self, id: u64) {
        self.next += 1;
        let since = self.next;
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        if entry.closing || entry.idle_since.is_some() {
            return;
        }
        entry.idle_since = Some(since);
        let i = list(entry.pool, entry.known);
        self.idle.entry(entry.peer).or_default().0[i].insert(since, id);
    }

    fn set_busy(&mut self, id: u64) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        let Some(since) = entry.idle_since.take() else {
            return;
        };
        let i = list(entry.pool, entry.known);
        if let Some(lists) = self.idle.get_mut(&entry.peer) {
            lists.0[i].remove(&since);
            if lists.is_empty() {
                self.idle.remove(&entry.peer);
            }
        }
    }

    /// Takes an idle connection out of the table's counts and tells its
    /// task to close it.
    fn close_for_room(&mut self, id: u64) {
        self.set_busy(id);
        if let Some(entry) = self.entries.get_mut(&id)
            && !entry.closing
        {
            entry.closing = true;
            self.open[entry.pool as usize] -= 1;
            entry.close.notify_one();
        }
    }

    fn remove(&mut self, id: u64) {
        self.set_busy(id);
        if let Some(entry) = self.entries.remove(&id)
            && !entry.closing
        {
            self.open[entry.pool as usize] -= 1;
        }
    }
}

/// One connection's place in the table, shared by its task, its service
/// and its socket.
pub(super) struct Link {
    id: u64,
    connections: Arc<Connections>,
    /// On the `/healthz` reserve: other requests get a `503`.
    pub health_only: bool,
    /// From a request head's arrival to its answer.
    in_request: AtomicBool,
    /// It has carried an authorized request (the table knows it too).
    known: AtomicBool,
    /// The last write to the socket did not finish: an answer is still
    /// going out.
    write_blocked: AtomicBool,
    close: Arc<Notify>,
}

impl Link {
    /// A request head has arrived: the connection is no longer idle until
    /// the guard is dropped (its answer handed to hyper).
    pub(super) fn begin(self: &Arc<Self>) -> Busy {
        self.in_request.store(true, Ordering::Relaxed);
        self.connections.table().set_busy(self.id);
        Busy(self.clone())
    }

    /// The request carried a token that passed the bearer check (or the
    /// server has none): the connection is no longer among the first
    /// closed.
    pub(super) fn authorized(&self) {
        if self.known.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut table = self.connections.table();
        if let Some(entry) = table.entries.get_mut(&self.id)
            && !entry.known
        {
            let idle = entry.idle_since.is_some();
            if idle {
                table.set_busy(self.id);
            }
            if let Some(entry) = table.entries.get_mut(&self.id) {
                entry.known = true;
            }
            if idle {
                table.set_idle(self.id);
            }
        }
    }

    /// Nothing in flight: no request being answered, no answer waiting
    /// for the socket.
    pub(super) fn is_idle(&self) -> bool {
        !self.in_request.load(Ordering::Relaxed) && !self.write_blocked.load(Ordering::Relaxed)
    }

    /// Completes when the connection is to be closed to make room.
    pub(super) async fn closed_for_room(&self) {
        self.close.notified().await;
    }

    pub(super) fn set_write_blocked(&self, blocked: bool) {
        self.write_blocked.store(blocked, Ordering::Relaxed);
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.connections.table().remove(self.id);
    }
}

/// A request in flight on a connection ([`Link::begin`]).
pub(super) struct Busy(Arc<Link>);

impl Busy {
    pub(super) fn link(&self) -> &Link {
        &self.0
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.in_request.store(false, Ordering::Relaxed);
        self.0.connections.table().set_idle(self.0.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn table(max_connections: usize, health_reserve: usize, per_peer: usize) -> Arc<Connections> {
        Connections::new(Limits {
            max_connections,
            health_reserve,
            max_idle_per_peer: per_peer,
        })
    }

    /// Whether `link` was told to close.
    fn told(link: &Link) -> bool {
        use std::future::Future;
        let notified = link.close.notified();
        let mut notified = std::pin::pin!(notified);
        let waker = std::task::Waker::noop();
        notified
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
            .is_ready()
    }

    #[test]
    fn a_peer_over_its_cap_loses_its_oldest_idle_connection() {
        let connections = table(100, 4, 3);
        let links: Vec<_> = (0..5)
            .map(|_| connections.admit(ip("10.0.0.1")).link.unwrap())
            .collect();
        let closed: Vec<bool> = links.iter().map(|l| told(l)).collect();
        assert_eq!(closed, [true, true, false, false, false]);
        assert_eq!(connections.open(), [3, 0]);
        // Another peer is not touched.
        let other = connections.admit(ip("10.0.0.2")).link.unwrap();
        assert!(!told(&other));
        // A connection with a request in flight is never chosen, nor one
        // that carried an authorized request.
        let busy = links[2].begin();
        links[3].authorized();
        let more: Vec<_> = (0..3)
            .map(|_| connections.admit(ip("10.0.0.1")).link.unwrap())
            .collect();
        assert!(!told(&links[2]) && !told(&links[3]));
        assert!(told(&links[4]));
        assert!(more.iter().all(|link| !told(link)));
        drop(busy);
    }

    #[test]
    fn a_full_table_closes_the_heaviest_peers_oldest_idle_connection() {
        let connections = table(6, 2, 100);
        let known = connections.admit(ip("10.0.0.9")).link.unwrap();
        known.begin();
        known.authorized();
        let flood: Vec<_> = (0..3)
            .map(|_| connections.admit(ip("10.0.0.1")).link.unwrap())
            .collect();
        let other: Vec<_> = (0..2)
            .map(|_| connections.admit(ip("10.0.0.2")).link.unwrap())
            .collect();
        assert_eq!(connections.open(), [6, 0]);
        let newcomer = connections.admit(ip("10.0.0.3")).link.unwrap();
        assert!(!newcomer.health_only);
        assert!(told(&flood[0]) && !told(&flood[1]));
        // 10.0.0.1 and .2 now have two each: the one idle longest goes.
        let _next = connections.admit(ip("10.0.0.3")).link.unwrap();
        assert!(told(&flood[1]) && !told(&other[0]));
        assert!(!told(&known), "a known connection goes last");
        assert_eq!(connections.open(), [6, 0]);
    }

    #[test]
    fn when_every_place_is_busy_the_reserve_takes_health_probes() {
        let connections = table(2, 2, 100);
        let busy: Vec<_> = (0..2)
            .map(|_| {
                let link = connections.admit(ip("10.0.0.1")).link.unwrap();
                link.begin()
            })
            .collect();
        let probes: Vec<_> = (0..3)
            .map(|_| connections.admit(ip("10.0.0.1")).link.unwrap())
            .collect();
        assert!(probes.iter().all(|p| p.health_only));
        // The third took the place of the oldest silent one.
        assert!(told(&probes[0]) && !told(&probes[1]));
        assert_eq!(connections.open(), [2, 2]);
        // Every place busy: nothing is admitted.
        let _held: Vec<_> = probes[1..].iter().map(|p| p.begin()).collect();
        assert!(connections.admit(ip("10.0.0.2")).link.is_none());
        assert!(!told(busy[0].link()));
        drop(busy);
    }

    #[test]
    fn closed_connections_leave_the_table() {
        let connections = table(4, 1, 2);
        let links: Vec<_> = (0..3)
            .map(|_| connections.admit(ip("::1")).link.unwrap())
            .collect();
        assert_eq!(connections.open(), [2, 0], "one was closed for the cap");
        drop(links);
        assert_eq!(connections.open(), [0, 0]);
        assert!(connections.table().entries.is_empty());
        assert!(connections.table().idle.is_empty());
    }

    #[test]
    fn ipv6_peers_are_grouped_by_their_64() {
        assert_eq!(
            Peer::of(ip("2001:db8::1")),
            Peer::of(ip("2001:db8::ffff:1"))
        );
        assert_ne!(Peer::of(ip("2001:db8::1")), Peer::of(ip("2001:db8:0:1::1")));
        assert_eq!(Peer::of(ip("::ffff:10.0.0.1")), Peer::of(ip("10.0.0.1")));
    }
}
