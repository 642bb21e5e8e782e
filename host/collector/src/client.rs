//! A minimal blocking HTTP/1.1 client for the collector's API (keep-alive,
//! `Content-Length` bodies only), used by `privq serve bench` and the tests.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The largest response head read (status line and headers).
const MAX_HEAD: usize = 16 * 1024;
/// The largest response body read.
const MAX_BODY: usize = 64 << 20;

/// One keep-alive connection to a collector, reopened after any failure.
#[derive(Debug)]
pub struct Client {
    addr: SocketAddr,
    timeout: Duration,
    stream: Option<TcpStream>,
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// The instant a request must be done by: each read and write may block only
/// for the time left, so a collector answering a byte at a time cannot hold the
/// client past it.
#[derive(Debug, Clone, Copy)]
struct Deadline(Instant);

impl Deadline {
    fn left(self) -> io::Result<Duration> {
        match self.0.checked_duration_since(Instant::now()) {
            Some(d) if !d.is_zero() => Ok(d),
            _ => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the request took longer than its timeout",
            )),
        }
    }

    fn read(self, stream: &mut TcpStream, buf: &mut [u8]) -> io::Result<usize> {
        stream.set_read_timeout(Some(self.left()?))?;
        stream.read(buf).map_err(timed_out)
    }

    fn write_all(self, stream: &mut TcpStream, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            stream.set_write_timeout(Some(self.left()?))?;
            match stream.write(bytes).map_err(timed_out)? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => bytes = bytes.get(n..).unwrap_or_default(),
            }
        }
        Ok(())
    }
}

/// A socket timeout surfaces as `WouldBlock` on Unix: name it for what it is.
fn timed_out(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::WouldBlock {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "the request took longer than its timeout",
        )
    } else {
        e
    }
}

impl Client {
    /// A client of the collector at `addr`; each request (connecting, sending and
    /// reading the whole answer) fails with [`io::ErrorKind::TimedOut`] once it has
    /// taken `timeout` (at most a day), however slowly the collector trickles its
    /// answer.
    pub fn new(addr: SocketAddr, timeout: Duration) -> Client {
        Client {
            addr,
            timeout: timeout.min(Duration::from_secs(86_400)),
            stream: None,
        }
    }

    /// `POST path` with a binary body: the status code and the response body.
    pub fn post(&mut self, path: &str, body: &[u8]) -> io::Result<(u16, Vec<u8>)> {
        self.request("POST", path, body)
    }

    /// `GET path`: the status code and the response body.
    pub fn get(&mut self, path: &str) -> io::Result<(u16, Vec<u8>)> {
        self.request("GET", path, &[])
    }

    fn request(&mut self, method: &str, path: &str, body: &[u8]) -> io::Result<(u16, Vec<u8>)> {
        let result = self.exchange(method, path, body);
        if result.is_err() {
            self.stream = None; // a failed exchange leaves the connection unusable
        }
        result
    }

    fn exchange(&mut self, method: &str, path: &str, body: &[u8]) -> io::Result<(u16, Vec<u8>)> {
        let deadline = Deadline(Instant::now() + self.timeout);
        let stream = match &mut self.stream {
            Some(s) => s,
            None => {
                let s = TcpStream::connect_timeout(&self.addr, deadline.left()?)?;
                s.set_nodelay(true)?;
                self.stream.insert(s)
            }
        };
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        deadline.write_all(stream, head.as_bytes())?;
        deadline.write_all(stream, body)?;
        // Read the head.
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            if buf.len() > MAX_HEAD {
                return Err(bad("response head too long"));
            }
            let n = deadline.read(stream, &mut chunk)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed before a response",
                ));
            }
            buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        };
        let head = std::str::from_utf8(buf.get(..end).unwrap_or_default())
            .map_err(|_| bad("response head is not UTF-8"))?;
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse::<u16>().ok())
            .ok_or_else(|| bad("no status code"))?;
        let mut length = None;
        let mut close = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close")
            {
                close = true;
            }
        }
        let length = length.ok_or_else(|| bad("no Content-Length"))?;
        if length > MAX_BODY {
            return Err(bad("response body too long"));
        }
        let mut body: Vec<u8> = buf.get(end + 4..).unwrap_or_default().to_vec();
        while body.len() < length {
            let n = deadline.read(stream, &mut chunk)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed inside a response",
                ));
            }
            body.extend_from_slice(chunk.get(..n).unwrap_or_default());
        }
        body.truncate(length);
        if close {
            self.stream = None;
        }
        Ok((status, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A collector that answers one byte every 50 ms cannot hold a request past its
    /// timeout (with a timeout per read, this request would wait for the whole trickle).
    #[test]
    fn a_trickled_answer_times_out_as_a_whole() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            let _ = s.read(&mut request);
            // 30 s of trickle, then the connection closes (an EOF error, not a timeout).
            for b in b"HTTP/1.1 200 OK\r\nX-Slow: "
                .iter()
                .chain([b'a'; 600].iter())
            {
                if s.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        // Any timeout is accepted (a day at most): the deadline cannot overflow.
        assert!(Client::new(addr, Duration::MAX).timeout <= Duration::from_secs(86_400));
        let mut client = Client::new(addr, Duration::from_millis(500));
        let err = client.get("/v1/estimates").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        drop(client);
        server.join().unwrap();
    }
}
