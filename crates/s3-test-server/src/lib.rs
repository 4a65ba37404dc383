//! Test support: a real S3-compatible server on the loopback, in the test's own process.
//!
//! The server is [`s3s_fs`] (from crates.io): every bucket is a directory under a root
//! directory and every object a file, so a server that is stopped and started again on
//! the same root still has its objects, as a restarted S3 service does. It speaks S3 over
//! HTTP with signature checks (a request signed with other credentials is refused), so the
//! client code under test is the real one (`object_store`), not a mock.
//!
//! ```text
//! let mut server = S3Server::start(dir, "bucket")?;   // s3://bucket at server.endpoint()
//! server.stop();                                      // the port closes
//! server.restart()?;                                  // same port, same objects
//! ```

use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use std::path::{Path, PathBuf};

/// The access key the server accepts.
pub const ACCESS_KEY: &str = "bredon-test-key";
/// The secret key the server accepts.
pub const SECRET_KEY: &str = "bredon-test-secret";
/// The region clients should name (the server accepts any).
pub const REGION: &str = "us-east-1";

/// A running (or stopped) S3 server on `127.0.0.1:port`.
pub struct S3Server {
    root: PathBuf,
    port: u16,
    runtime: Option<tokio::runtime::Runtime>,
}

impl S3Server {
    /// Starts a server on a free loopback port, storing objects under `root`, with the
    /// bucket `bucket` created (empty `bucket` = no bucket).
    pub fn start(root: &Path, bucket: &str) -> std::io::Result<S3Server> {
        if !bucket.is_empty() {
            std::fs::create_dir_all(root.join(bucket))?;
        }
        let mut s = S3Server { root: root.to_path_buf(), port: 0, runtime: None };
        s.serve()?;
        Ok(s)
    }

    /// `http://127.0.0.1:PORT`, the value for `AWS_ENDPOINT_URL`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment a client process needs to reach this server (the standard AWS
    /// variables, as `object_store` reads them).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_REGION", REGION.to_string()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server: the port is closed and open connections are dropped at once.
    pub fn stop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }

    /// Starts the stopped server again on the same port and root (its objects are kept).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.stop();
        // The port was just closed; binding it again can take a moment.
        let mut last = None;
        for _ in 0..50 {
            match self.serve() {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Err(last.expect("tried"))
    }

    fn serve(&mut self) -> std::io::Result<()> {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let fs = s3s_fs::FileSystem::new(&self.root).map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        let service = {
            let mut b = S3ServiceBuilder::new(fs);
            b.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
            b.build()
        };
        let listener = rt.block_on(tokio::net::TcpListener::bind(("127.0.0.1", self.port)))?;
        self.port = listener.local_addr()?.port();
        rt.spawn(async move {
            use hyper_util::rt::{TokioExecutor, TokioIo};
            let http = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            loop {
                let Ok((socket, _)) = listener.accept().await else { continue };
                let conn = http.serve_connection(TokioIo::new(socket), service.clone()).into_owned();
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
        });
        self.runtime = Some(rt);
        Ok(())
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}
