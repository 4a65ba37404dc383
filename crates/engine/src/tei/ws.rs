//! The engine over a WebSocket (`bredon tei --listen ADDR:PORT`), for PTN Ninja and other
//! browser pages, which cannot start a process: each connection gets its own
//! [`TeiEngine`]; TEI lines travel as text frames (a frame may hold several lines, split
//! at newlines; each line the engine sends is one frame). A connection that closes, or
//! fails, stops its engine's search before its thread ends.
//!
//! Synchronous: one thread per connection, reading with a short timeout so that the same
//! thread also sends the engine's lines as they come (tungstenite's socket is not split
//! into halves).

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tungstenite::error::ProtocolError;
use tungstenite::handshake::HandshakeError;
use tungstenite::{Message, WebSocket};

use super::{Flow, LineSink, ListenError, TeiEngine};

/// How long a connection's thread waits for a frame before it sends the engine's lines.
const POLL: Duration = Duration::from_millis(5);

/// How long a closing connection waits for the client's close frame.
const CLOSE_WAIT: Duration = Duration::from_millis(500);

/// What happened to a connection, for the front end's log.
#[derive(Debug)]
pub enum WsEvent {
    /// A client connected and the WebSocket handshake succeeded.
    Opened {
        /// The client's address.
        peer: SocketAddr,
    },
    /// A connection that was not a WebSocket (or broke during the handshake).
    Refused {
        /// The client's address.
        peer: SocketAddr,
        /// Why.
        error: tungstenite::Error,
    },
    /// A connection ended; its engine has stopped and its search thread has ended.
    Closed {
        /// The client's address.
        peer: SocketAddr,
        /// How it ended.
        end: WsEnd,
        /// Whether a search was running when it ended (it was stopped).
        stopped_search: bool,
    },
}

/// How a connection ended.
#[derive(Debug)]
pub enum WsEnd {
    /// The client closed it (a close frame or the socket's end).
    Closed,
    /// The client sent `quit`.
    Quit,
    /// Reading or writing failed.
    Failed(tungstenite::Error),
}

/// Connections whose thread is still running (for tests and logs).
#[derive(Clone, Debug, Default)]
pub struct ConnectionCount(Arc<AtomicUsize>);

impl ConnectionCount {
    /// Connections open now (accepted, not yet ended: an ended one has stopped its search).
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A bound WebSocket listener, not yet serving.
pub struct WsListener {
    listener: TcpListener,
    addr: SocketAddr,
    open: ConnectionCount,
}

impl WsListener {
    /// Binds `addr` (`127.0.0.1:7731`; port 0 picks a free one).
    pub fn bind(addr: &str) -> Result<WsListener, ListenError> {
        let bind_error = |source| ListenError::Bind { addr: addr.to_string(), source };
        let addrs: Vec<SocketAddr> = addr.to_socket_addrs().map_err(bind_error)?.collect();
        let listener = TcpListener::bind(&addrs[..]).map_err(bind_error)?;
        let addr = listener.local_addr().map_err(bind_error)?;
        Ok(WsListener { listener, addr, open: ConnectionCount::default() })
    }

    /// The address it listens on (with the port chosen for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The count of open connections.
    pub fn connections(&self) -> ConnectionCount {
        self.open.clone()
    }

    /// Serves until the listening socket fails: each connection on its own thread with
    /// the engine `new_engine` makes for it (writing to the sink it is given); `events`
    /// hears of every connection's start and end.
    pub fn serve<F, E>(self, new_engine: F, events: E) -> Result<(), ListenError>
    where
        F: Fn(Arc<dyn LineSink>) -> TeiEngine + Send + Sync + 'static,
        E: Fn(WsEvent) + Send + Sync + 'static,
    {
        let new_engine = Arc::new(new_engine);
        let events = Arc::new(events);
        loop {
            let (stream, peer) = match self.listener.accept() {
                Ok(c) => c,
                // A client that gave up before the accept: not the listener's fault.
                Err(e) if matches!(e.kind(), ErrorKind::ConnectionAborted | ErrorKind::Interrupted) => continue,
                Err(e) => return Err(ListenError::Accept(e)),
            };
            let (new_engine, events, open) = (new_engine.clone(), events.clone(), self.open.clone());
            open.0.fetch_add(1, Ordering::SeqCst);
            let spawned = std::thread::Builder::new().name(format!("tei-ws-{peer}")).spawn(move || {
                serve_connection(stream, peer, &*new_engine, &*events);
                open.0.fetch_sub(1, Ordering::SeqCst);
            });
            if let Err(e) = spawned {
                self.open.0.fetch_sub(1, Ordering::SeqCst);
                return Err(ListenError::Accept(e));
            }
        }
    }
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Sends the lines waiting in `lines`, one text frame each.
fn send_lines(ws: &mut WebSocket<TcpStream>, lines: &mpsc::Receiver<String>) -> Result<(), tungstenite::Error> {
    while let Ok(line) = lines.try_recv() {
        ws.send(Message::text(line))?;
    }
    Ok(())
}

fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    new_engine: &(dyn Fn(Arc<dyn LineSink>) -> TeiEngine + Send + Sync),
    events: &(dyn Fn(WsEvent) + Send + Sync),
) {
    let _ = stream.set_nodelay(true);
    let mut ws = match tungstenite::accept(stream) {
        Ok(ws) => ws,
        Err(HandshakeError::Failure(error)) => return events(WsEvent::Refused { peer, error }),
        Err(HandshakeError::Interrupted(_)) => {
            let error = tungstenite::Error::Io(ErrorKind::WouldBlock.into());
            return events(WsEvent::Refused { peer, error });
        }
    };
    if let Err(e) = ws.get_ref().set_read_timeout(Some(POLL)) {
        return events(WsEvent::Closed { peer, end: WsEnd::Failed(e.into()), stopped_search: false });
    }
    events(WsEvent::Opened { peer });
    let (tx, lines) = mpsc::channel::<String>();
    let notes = tx.clone();
    let mut engine = new_engine(Arc::new(tx));
    let end = loop {
        if let Err(e) = send_lines(&mut ws, &lines) {
            break WsEnd::Failed(e);
        }
        match ws.read() {
            Ok(Message::Text(text)) => {
                if text.lines().any(|line| engine.handle_line(line) == Flow::Quit) {
                    break WsEnd::Quit;
                }
            }
            Ok(Message::Binary(_)) => {
                notes.send_line("info string error: a binary frame; TEI lines go in text frames");
            }
            Ok(Message::Close(_)) => break WsEnd::Closed,
            Ok(_) => {} // Pings are answered by tungstenite.
            Err(tungstenite::Error::Io(e)) if would_block(&e) => {}
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => break WsEnd::Closed,
            // A client gone without the closing handshake (a closed tab, a killed process).
            Err(tungstenite::Error::Io(e)) if e.kind() == ErrorKind::ConnectionReset => break WsEnd::Closed,
            Err(tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake)) => break WsEnd::Closed,
            Err(e) => break WsEnd::Failed(e),
        }
    };
    // Stop the search; when this returns its thread has ended.
    let stopped_search = engine.is_searching();
    engine.interrupt();
    drop(engine);
    // The last lines (a `bestmove` after `quit`) and the closing handshake, best effort.
    if matches!(end, WsEnd::Quit) {
        let _ = send_lines(&mut ws, &lines);
        let _ = ws.close(None);
    } else {
        let _ = ws.flush();
    }
    let deadline = Instant::now() + CLOSE_WAIT;
    while Instant::now() < deadline {
        match ws.read() {
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if would_block(&e) => {}
            Err(_) => break,
        }
    }
    events(WsEvent::Closed { peer, end, stopped_search });
}
