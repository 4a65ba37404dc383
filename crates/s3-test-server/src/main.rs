//! `bredon-s3-test-server ROOT [BUCKET]`: the tests' S3 server as a program, for trying a
//! run on an object store by hand (docs/scaling-out.md). Prints the environment to use,
//! then serves until killed.

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next() else {
        eprintln!("usage: bredon-s3-test-server ROOT [BUCKET]   (serves s3://BUCKET on the loopback)");
        std::process::exit(2);
    };
    let bucket = args.next().unwrap_or_else(|| "bredon".into());
    let server = match bredon_s3_test_server::S3Server::start(std::path::Path::new(&root), &bucket) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: starting the server on {root}: {e}");
            std::process::exit(1);
        }
    };
    for (k, v) in server.env() {
        println!("export {k}={v}");
    }
    println!("# bucket: s3://{bucket}");
    loop {
        std::thread::park();
    }
}
