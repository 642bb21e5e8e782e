//! A minimal blocking HTTP/1.1 client for the collector's API (keep-alive,
//! `Content-Length` bodies only), used by `privq serve bench` and the tests.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

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

impl Client {
    /// A client of the collector at `addr`; every read and write times out after `timeout`.
    pub fn new(addr: SocketAddr, timeout: Duration) -> Client {
        Client {
            addr,
            timeout,
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
        let stream = match &mut self.stream {
            Some(s) => s,
            None => {
                let s = TcpStream::connect_timeout(&self.addr, self.timeout)?;
                s.set_read_timeout(Some(self.timeout))?;
                s.set_write_timeout(Some(self.timeout))?;
                s.set_nodelay(true)?;
                self.stream.insert(s)
            }
        };
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
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
            let n = stream.read(&mut chunk)?;
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
            let n = stream.read(&mut chunk)?;
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
