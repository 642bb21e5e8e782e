use super::*;
use crate::store::{Policy, Store};

use std::net::SocketAddr;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A collector on 127.0.0.1 under `limits` (empty store); dropping the sender stops it.
async fn start(
    name: &str,
    limits: ConnectionLimits,
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let store = fresh_store(name);
    let collector = Arc::new(Collector::new(store, Policy::default(), true).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_with(listener, collector, limits, async move {
        let _ = stopped.await;
    }));
    (addr, stop)
}

/// An empty store in a fresh temporary database named after `name`.
fn fresh_store(name: &str) -> Store {
    let path =
        std::env::temp_dir().join(format!("privq-http-{name}-{}.sqlite", std::process::id()));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    Store::open(&path).unwrap()
}

/// `n` connections that send nothing, once the server has accepted them.
async fn idle_connections(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut idle = Vec::with_capacity(n);
    for _ in 0..n {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    idle
}

/// Everything the server sends until it closes the connection (at most `within`).
async fn read_all(s: &mut TcpStream, within: Duration) -> Option<String> {
    let mut out = Vec::new();
    tokio::time::timeout(within, s.read_to_end(&mut out))
        .await
        .ok()
        .map(|_| String::from_utf8_lossy(&out).into_owned())
}

const GET: &[u8] = b"GET /v1/estimates HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_do_not_block_others_and_are_cut_off() {
    let limits = ConnectionLimits {
        header_timeout: Duration::from_secs(2),
        body_timeout: Duration::from_secs(2),
        max_connections: 8,
        max_connections_per_peer: 32,
        connection_timeout: Duration::from_secs(60),
    };
    let (addr, _stop) = start("slow", limits).await;
    let mut headers = TcpStream::connect(addr).await.unwrap();
    headers
        .write_all(b"POST /v1/frames HTTP/1.1\r\nHost: t\r\n")
        .await
        .unwrap();
    let mut body = TcpStream::connect(addr).await.unwrap();
    body.write_all(b"POST /v1/frames HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789")
        .await
        .unwrap();
    let started = Instant::now();
    let mut other = TcpStream::connect(addr).await.unwrap();
    other.write_all(GET).await.unwrap();
    let answer = read_all(&mut other, Duration::from_secs(10)).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "answered while the slow clients stall: {:?}",
        started.elapsed()
    );
    let cut = read_all(&mut body, Duration::from_secs(10)).await.unwrap();
    assert!(cut.starts_with("HTTP/1.1 408"), "slow body: {cut}");
    let cut = read_all(&mut headers, Duration::from_secs(10)).await;
    assert!(cut.is_some(), "slow headers: the connection is closed");
    assert!(started.elapsed() >= Duration::from_millis(1500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_limit_holds() {
    let limits = ConnectionLimits {
        header_timeout: Duration::from_secs(2),
        body_timeout: Duration::from_secs(2),
        max_connections: 2,
        max_connections_per_peer: 32,
        connection_timeout: Duration::from_secs(60),
    };
    let (addr, _stop) = start("limit", limits).await;
    let idle = idle_connections(addr, 2).await;
    let mut third = TcpStream::connect(addr).await.unwrap();
    third.write_all(GET).await.unwrap();
    // Both slots are held: no answer while the idle connections last …
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(1000), third.read(&mut byte)).await;
    assert!(early.is_err(), "served beyond the limit: {early:?}");
    // … and an answer once the header timeout has closed them.
    let answer = read_all(&mut third, Duration::from_secs(10)).await.unwrap();
    assert!(
        format!("{}{answer}", byte[0] as char).contains("200 OK"),
        "{answer}"
    );
    for mut s in idle {
        assert!(read_all(&mut s, Duration::from_secs(10)).await.is_some());
    }
}

/// Answers of `GET /v1/estimates` that clients do not read hold their permits:
/// past `MAX_ESTIMATES_IN_FLIGHT` the collector answers 503 instead of building
/// more, and serves again once they are read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_estimates_answers_are_bounded() {
    use privq_core::upload::{DeviceKey, FrameWriter};
    let mut store = fresh_store("inflight");
    let key = DeviceKey::new([3; 32]);
    store
        .provision(3, &key, privq_core::Epsilon::new(100, 1).unwrap())
        .unwrap();
    let c = Arc::new(Collector::new(store, Policy::default(), true).unwrap());
    // Four OUE groups over 2^16 items: about 25 MB of estimates JSON, more
    // than the socket buffers hold.
    let mut buf = vec![0u8; 40_000];
    for q in 0..4u8 {
        let mut w = FrameWriter::new(&mut buf, 3, 0, u32::from(q)).unwrap();
        let mut report = vec![1, 4, q, 0, 1, 0, 1, 0, 0, 0, 1, 0];
        report.extend(std::iter::repeat_n(0x5a, 8192));
        w.push(&report).unwrap();
        let n = w.finish(&key).unwrap();
        assert!(c.submit(&[&buf[..n]]).unwrap()[0].acknowledged());
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_with(
        listener,
        c,
        ConnectionLimits::default(),
        async move {
            let _ = stopped.await;
        },
    ));
    let get = |confidence: u32| {
        format!(
            "GET /v1/estimates?confidence=0.{confidence} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        )
    };
    let mut unread = Vec::new();
    for i in 0..MAX_ESTIMATES_IN_FLIGHT as u32 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(get(90 + i).as_bytes()).await.unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        unread.push(s);
    }
    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(get(80).as_bytes()).await.unwrap();
    let answer = read_all(&mut busy, Duration::from_secs(30)).await.unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 503"),
        "{}",
        &answer[..answer.len().min(200)]
    );
    for mut s in unread {
        let rest = read_all(&mut s, Duration::from_secs(60)).await.unwrap();
        assert!(rest.len() > 1 << 20, "a large answer: {} bytes", rest.len());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut again = TcpStream::connect(addr).await.unwrap();
    again.write_all(get(80).as_bytes()).await.unwrap();
    let answer = read_all(&mut again, Duration::from_secs(30)).await.unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "{}",
        &answer[..answer.len().min(200)]
    );
}

/// One peer holds at most its share of the slots; another peer is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_peer_cannot_take_every_slot() {
    let limits = ConnectionLimits {
        max_connections: 4,
        max_connections_per_peer: 2,
        ..ConnectionLimits::default()
    };
    let (addr, _stop) = start("peer", limits).await;
    let idle = idle_connections(addr, 2).await;
    // A third connection of 127.0.0.1 is closed without an answer …
    let mut third = TcpStream::connect(addr).await.unwrap();
    let _ = third.write_all(GET).await;
    let answer = read_all(&mut third, Duration::from_secs(5)).await;
    assert_eq!(answer.as_deref(), Some(""), "closed at once, unanswered");
    // … while another peer (127.0.0.2, also loopback on Linux) is served.
    let other = tokio::net::TcpSocket::new_v4().unwrap();
    other.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut other = other.connect(addr).await.unwrap();
    other.write_all(GET).await.unwrap();
    let answer = read_all(&mut other, Duration::from_secs(5)).await.unwrap();
    assert!(answer.contains("200 OK"), "{answer}");
    // Once its connections close, the first peer is served again.
    drop(idle);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = TcpStream::connect(addr).await.unwrap();
    again.write_all(GET).await.unwrap();
    let answer = read_all(&mut again, Duration::from_secs(5)).await.unwrap();
    assert!(answer.contains("200 OK"), "{answer}");
}

#[test]
fn ipv6_peers_are_their_64_networks() {
    let a: std::net::IpAddr = "2001:db8:1:2::1".parse().unwrap();
    let b: std::net::IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
    let c: std::net::IpAddr = "2001:db8:1:3::1".parse().unwrap();
    assert_eq!(Peer::of(a), Peer::of(b));
    assert_ne!(Peer::of(a), Peer::of(c));
    let mapped: std::net::IpAddr = "::ffff:10.0.0.1".parse().unwrap();
    assert_eq!(Peer::of(mapped), Peer::of("10.0.0.1".parse().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_cut_off_and_its_slot_freed() {
    let limits = ConnectionLimits {
        header_timeout: Duration::from_secs(2),
        body_timeout: Duration::from_secs(2),
        max_connections: 1,
        max_connections_per_peer: 32,
        connection_timeout: Duration::from_secs(2),
    };
    let (addr, _stop) = start("noread", limits).await;
    // Pipelined requests whose responses are never read: the server's writes fill
    // the socket buffers and block; every request's headers arrived at once, so
    // the header timeout does not help.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let hog = socket.connect(addr).await.unwrap();
    let (mut hog_read, mut hog_write) = hog.into_split();
    let flood = tokio::spawn(async move {
        let one: &[u8] = b"GET /v1/estimates HTTP/1.1\r\nHost: t\r\n\r\n";
        let many = one.repeat(1000);
        for _ in 0..200 {
            if hog_write.write_all(&many).await.is_err() {
                break;
            }
        }
        hog_write
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The only slot is held; a second client is answered once the deadline has
    // closed the hog's connection.
    let started = Instant::now();
    let mut other = TcpStream::connect(addr).await.unwrap();
    other.write_all(GET).await.unwrap();
    let answer = read_all(&mut other, Duration::from_secs(20)).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The hog's connection was closed: reading drains to its end.
    let mut sink = vec![0u8; 1 << 16];
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match hog_read.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the non-reading client was not disconnected"
    );
    flood.abort();
}

/// One answer is shared until a report is added or another confidence asked.
#[test]
fn estimates_json_is_kept_until_the_aggregate_changes() {
    use privq_core::upload::{DeviceKey, FrameWriter};
    let mut store = fresh_store("answered");
    let key = DeviceKey::new([4; 32]);
    let cap = privq_core::Epsilon::new(10, 1).unwrap();
    store.provision(4, &key, cap).unwrap();
    let c = Collector::new(store, Policy::default(), true).unwrap();
    let first = c.estimates_json(0.95).unwrap();
    let again = c.estimates_json(0.95).unwrap();
    assert_eq!(
        first.as_ptr(),
        again.as_ptr(),
        "the same answer, not a copy"
    );
    let other = c.estimates_json(0.9).unwrap();
    assert_ne!(first, other);
    let mut buf = [0u8; 128];
    let mut w = FrameWriter::new(&mut buf, 4, 0, 0).unwrap();
    w.push(&[1, 8, 0, 0, 1, 0, 8, 0, 0, 0, 0, 0, 1]).unwrap();
    let n = w.finish(&key).unwrap();
    assert!(c.submit(&[&buf[..n]]).unwrap()[0].acknowledged());
    let after = c.estimates_json(0.9).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&after).unwrap();
    assert_eq!(v["reports"], 1);
    assert_eq!(
        serde_json::to_vec(&c.estimates(0.9)).unwrap(),
        after.to_vec(),
        "the kept answer is the estimates' JSON"
    );
}

#[test]
fn batches_split_and_refuse_truncation() {
    let mut body = Vec::new();
    push_batch(&mut body, b"abc").unwrap();
    push_batch(&mut body, b"").unwrap();
    assert_eq!(split_batch(&body).unwrap(), vec![&b"abc"[..], &b""[..]]);
    assert_eq!(split_batch(&[]), Err(BatchError::Empty));
    assert_eq!(split_batch(&[5]), Err(BatchError::Truncated { offset: 0 }));
    // Empty entries are two bytes each: a body of many of them would be
    // answered with a status each, so their number is bounded.
    let zeros = vec![0u8; 2 * MAX_BATCH_FRAMES];
    assert_eq!(split_batch(&zeros).unwrap().len(), MAX_BATCH_FRAMES);
    let zeros = vec![0u8; 2 * MAX_BATCH_FRAMES + 2];
    assert_eq!(split_batch(&zeros), Err(BatchError::TooManyFrames));
    assert_eq!(
        split_batch(&body[..body.len() - 1]),
        Err(BatchError::Truncated { offset: 5 })
    );
}
