// A session's live events over Server-Sent Events, each once and in order, across dropped
// connections: the browser's EventSource reconnects on its own with Last-Event-ID; when it
// gives up (an HTTP error) or the server says this client fell behind, a new stream starts
// after the last seq received. Events come out in batches, one per animation frame.

export class LiveStream {
  constructor(sessionId, { onEvents, onStatus, onRevoked = () => {}, afterSeq = 0 }) {
    this.sessionId = sessionId;
    this.onEvents = onEvents;
    this.onStatus = onStatus;
    this.onRevoked = onRevoked;
    this.lastSeq = afterSeq;
    this.pending = [];
    this.frame = null;
    this.source = null;
    this.retry = null;
    this.failures = 0;
    this.closed = false;
    this.open();
  }

  open() {
    if (this.closed) return;
    this.onStatus(this.failures ? "reconnecting" : "connecting");
    const source = new EventSource(`/api/sessions/${this.sessionId}/stream?after_seq=${this.lastSeq}`);
    this.source = source;
    source.onopen = () => {
      this.failures = 0;
      this.onStatus("live");
    };
    source.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.seq <= this.lastSeq) return;
      this.lastSeq = event.seq;
      this.pending.push(event);
      if (this.frame === null) this.frame = requestAnimationFrame(() => this.flush());
    };
    source.addEventListener("lagging", (message) => {
      const lagging = JSON.parse(message.data);
      this.restart(Math.max(this.lastSeq, lagging.resume_after_seq), 0);
    });
    // the server is stopping: come back (to it or another API process) a moment later
    source.addEventListener("closing", (message) => {
      const closing = JSON.parse(message.data);
      this.restart(Math.max(this.lastSeq, closing.resume_after_seq), 500);
    });
    // the login (or its token, or its user) ended: reconnecting would only be refused
    source.addEventListener("revoked", (message) => {
      this.close();
      this.onStatus("signed out");
      this.onRevoked(JSON.parse(message.data).detail);
    });
    source.onerror = () => {
      if (this.closed) return;
      if (source.readyState === EventSource.CLOSED) {
        this.failures += 1;
        this.restart(this.lastSeq, Math.min(10000, 500 * 2 ** this.failures));
      } else {
        this.failures += 1;
        this.onStatus("reconnecting");
      }
    };
  }

  restart(afterSeq, delay) {
    this.source?.close();
    this.lastSeq = afterSeq;
    this.onStatus("reconnecting");
    clearTimeout(this.retry);
    this.retry = setTimeout(() => this.open(), delay);
  }

  /** Drop the connection and carry on from the last event (as a lost network would). */
  reconnect() {
    this.restart(this.lastSeq, 0);
  }

  flush() {
    this.frame = null;
    const batch = this.pending;
    this.pending = [];
    if (batch.length && !this.closed) this.onEvents(batch);
  }

  close() {
    this.closed = true;
    clearTimeout(this.retry);
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.source?.close();
  }
}
