//! Helpers shared by the `privq` binary's CLI tests (`cli_outputs`, `cli_inputs`,
//! `cli_ledger`): a scratch directory, running the binary, and small inputs.
// Each test binary compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("privq-cli-out-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    pub fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }

    pub fn write(&self, f: &str, text: &str) -> PathBuf {
        let p = self.path(f);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The directory's file names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn privq(cwd: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_privq"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command may not read its standard input; a closed pipe is not an error here.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub const TABLE: &str = "a,b,c,count\n0,0,0,40\n0,1,1,25\n1,0,1,20\n1,1,0,15\n";

pub fn points(n: usize) -> String {
    let mut s = String::from("x,y\n");
    for i in 0..n {
        s.push_str(&format!(
            "{},{}\n",
            (i * 7919 % n) as f64 / n as f64,
            (i * 31 % 97) as f64 / 96.0
        ));
    }
    s
}
