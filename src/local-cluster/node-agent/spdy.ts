// The server side of SPDY/3.1 as the apiserver speaks it to a kubelet for port-forward and exec
// (github.com/moby/spdystream, the SPDY/3 draft): multiplexed streams over one upgraded
// connection, their headers zlib-compressed with the draft's dictionary in one context per
// direction. Only what those two features use is here: the peer opens every stream, flow control
// is not enforced (spdystream neither sends nor honours WINDOW_UPDATE), and pings are answered.
import { Duplex } from 'node:stream';
import { constants, createDeflate, createInflate, type Deflate, type Inflate } from 'node:zlib';

export const SPDY_PROTOCOL = 'SPDY/3.1';

const VERSION = 3;
const SYN_STREAM = 1;
const SYN_REPLY = 2;
const RST_STREAM = 3;
const PING = 6;
const GOAWAY = 7;
const HEADERS = 8;
const FLAG_FIN = 0x01;
/** The RST_STREAM status sent when this side gives up a stream. */
const RST_CANCEL = 5;
/** A DATA frame's payload is cut at this size; the protocol allows up to 16 MiB. */
const MAX_DATA_PAYLOAD = 64 * 1024;

/** The SPDY/3 draft's header compression dictionary: length-prefixed words, then a literal tail. */
export const HEADER_DICTIONARY = Buffer.concat([
  ...[
    'options',
    'head',
    'post',
    'put',
    'delete',
    'trace',
    'accept',
    'accept-charset',
    'accept-encoding',
    'accept-language',
    'accept-ranges',
    'age',
    'allow',
    'authorization',
    'cache-control',
    'connection',
    'content-base',
    'content-encoding',
    'content-language',
    'content-length',
    'content-location',
    'content-md5',
    'content-range',
    'content-type',
    'date',
    'etag',
    'expect',
    'expires',
    'from',
    'host',
    'if-match',
    'if-modified-since',
    'if-none-match',
    'if-range',
    'if-unmodified-since',
    'last-modified',
    'location',
    'max-forwards',
    'pragma',
    'proxy-authenticate',
    'proxy-authorization',
    'range',
    'referer',
    'retry-after',
    'server',
    'te',
    'trailer',
    'transfer-encoding',
    'upgrade',
    'user-agent',
    'vary',
    'via',
    'warning',
    'www-authenticate',
    'method',
    'get',
    'status',
    '200 OK',
    'version',
    'HTTP/1.1',
    'url',
    'public',
    'set-cookie',
    'keep-alive',
    'origin',
  ].map((word) => Buffer.concat([uint32(word.length), Buffer.from(word)])),
  Buffer.from(
    '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
      '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request' +
      '401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented' +
      '503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ' +
      'Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,' +
      'application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=' +
      'gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.',
  ),
]);

/** A header block: lowercase names, each with its values (sent joined by NUL). */
export type SpdyHeaders = Record<string, string[]>;

export type SpdyFrame =
  | { kind: 'data'; streamId: number; fin: boolean; data: Buffer }
  | { kind: 'control'; type: number; flags: number; payload: Buffer };

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

/** The first whole frame in `buf` and its size on the wire, or undefined until more bytes arrive. */
export function readFrame(buf: Buffer): { frame: SpdyFrame; size: number } | undefined {
  if (buf.length < 8) return undefined;
  const length = buf.readUInt32BE(4) & 0xffffff;
  if (buf.length < 8 + length) return undefined;
  const flags = buf[4] ?? 0;
  const payload = buf.subarray(8, 8 + length);
  const first = buf.readUInt32BE(0);
  if ((first & 0x80000000) === 0)
    return {
      frame: { kind: 'data', streamId: first, fin: (flags & FLAG_FIN) !== 0, data: payload },
      size: 8 + length,
    };
  const version = (first >>> 16) & 0x7fff;
  if (version !== VERSION) throw new Error(`SPDY version ${version} is not spoken here (only ${VERSION})`);
  return { frame: { kind: 'control', type: first & 0xffff, flags, payload }, size: 8 + length };
}

export function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | VERSION, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags << 24) | payload.length) >>> 0, 4);
  return Buffer.concat([head, payload]);
}

export function dataFrame(streamId: number, fin: boolean, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE((((fin ? FLAG_FIN : 0) << 24) | data.length) >>> 0, 4);
  return Buffer.concat([head, data]);
}

/** An uncompressed header block: a count, then each name and value with a 32-bit length. */
export function encodeHeaderBlock(headers: SpdyHeaders): Buffer {
  const parts: Buffer[] = [uint32(Object.keys(headers).length)];
  for (const [name, values] of Object.entries(headers)) {
    const value = Buffer.from(values.join('\0'));
    const key = Buffer.from(name.toLowerCase());
    parts.push(uint32(key.length), key, uint32(value.length), value);
  }
  return Buffer.concat(parts);
}

export function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  const headers: SpdyHeaders = {};
  let at = 0;
  const take = (): string => {
    if (at + 4 > block.length) throw new Error('a SPDY header block ends inside a length');
    const n = block.readUInt32BE(at);
    if (at + 4 + n > block.length) throw new Error('a SPDY header block ends inside a name or value');
    const s = block.toString('utf8', at + 4, at + 4 + n);
    at += 4 + n;
    return s;
  };
  if (block.length < 4) throw new Error('a SPDY header block has no count');
  const count = block.readUInt32BE(0);
  at = 4;
  for (let i = 0; i < count; i++) {
    const name = take().toLowerCase();
    headers[name] = take().split('\0');
  }
  return headers;
}

/** Runs one zlib context as a sequence of sync-flushed blocks, as SPDY compresses every header block. */
async function flushBlock(z: Deflate | Inflate, input: Buffer): Promise<Buffer> {
  const out: Buffer[] = [];
  const collect = (chunk: Buffer) => out.push(chunk);
  z.on('data', collect);
  try {
    await new Promise<void>((resolve, reject) => {
      z.once('error', reject);
      z.write(input);
      z.flush(constants.Z_SYNC_FLUSH, () => {
        z.off('error', reject);
        resolve();
      });
    });
  } finally {
    z.off('data', collect);
  }
  return Buffer.concat(out);
}

/** One stream the peer opened: its headers, its data in and out. Ending it sends FIN; destroying it, RST_STREAM. */
export class SpdyStream extends Duplex {
  readonly id: number;
  readonly headers: SpdyHeaders;
  private readonly conn: SpdyConnection;
  private resetByPeer = false;
  private finSent = false;

  constructor(id: number, headers: SpdyHeaders, conn: SpdyConnection) {
    super({ allowHalfOpen: true });
    this.id = id;
    this.headers = headers;
    this.conn = conn;
    // A stream fails only with its connection, which closes it: handlers act on 'close', and a
    // client going away must never surface as an unhandled error in the node agent.
    this.on('error', () => undefined);
  }

  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()]?.[0];
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.conn.sendData(this.id, chunk, false).then(() => done(), done);
  }

  override _final(done: (err?: Error | null) => void): void {
    this.finSent = true;
    this.conn.sendData(this.id, Buffer.alloc(0), true).then(() => done(), done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.conn.forget(this.id);
    if (!this.resetByPeer && !(this.finSent && this.readableEnded)) this.conn.sendReset(this.id, RST_CANCEL);
    done(err);
  }

  /** Called by the connection. */
  received(data: Buffer, fin: boolean): void {
    if (data.length > 0) this.push(data);
    if (fin) this.push(null);
  }

  /**
   * Called by the connection: the peer reset the stream, or the connection is gone. The stream
   * closes without an error: a reset is how a client says it is done early.
   */
  peerReset(): void {
    this.resetByPeer = true;
    this.destroy();
  }
}

/**
 * A SPDY/3.1 connection whose peer opens the streams (the apiserver, for a kubelet). Every
 * SYN_STREAM is answered at once with a SYN_REPLY and handed to `onStream`.
 */
export class SpdyConnection {
  private readonly socket: Duplex;
  private readonly onStream: (stream: SpdyStream) => void;
  private readonly inflate = createInflate({ dictionary: HEADER_DICTIONARY });
  private readonly deflate = createDeflate({ dictionary: HEADER_DICTIONARY });
  private readonly streams = new Map<number, SpdyStream>();
  private buffered: Buffer = Buffer.alloc(0);
  /** Frames are handled, and written, strictly in order: both header contexts depend on it. */
  private incoming: Promise<void> = Promise.resolve();
  private outgoing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(socket: Duplex, head: Buffer, onStream: (stream: SpdyStream) => void) {
    this.socket = socket;
    this.onStream = onStream;
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('close', () => this.close());
    socket.on('error', () => this.close());
    if (head.length > 0) this.receive(head);
  }

  /** The connection ended (or the peer broke the protocol): every stream still open is reset. */
  private close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of [...this.streams.values()]) stream.peerReset();
    this.streams.clear();
    this.inflate.close();
    this.deflate.close();
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    try {
      for (let next = readFrame(this.buffered); next; next = readFrame(this.buffered)) {
        const { frame } = next;
        this.buffered = this.buffered.subarray(next.size);
        this.incoming = this.incoming.then(() => this.handle(frame));
      }
    } catch {
      this.close();
      return;
    }
    this.incoming = this.incoming.catch(() => this.close());
  }

  private async handle(frame: SpdyFrame): Promise<void> {
    if (this.closed) return;
    if (frame.kind === 'data') {
      // Data for a stream already closed here is late, not wrong: it is dropped.
      this.streams.get(frame.streamId)?.received(Buffer.from(frame.data), frame.fin);
      return;
    }
    const { payload } = frame;
    switch (frame.type) {
      case SYN_STREAM: {
        const id = payload.readUInt32BE(0) & 0x7fffffff;
        const headers = decodeHeaderBlock(await flushBlock(this.inflate, payload.subarray(10)));
        const stream = new SpdyStream(id, headers, this);
        this.streams.set(id, stream);
        await this.send(async () =>
          controlFrame(
            SYN_REPLY,
            0,
            Buffer.concat([uint32(id), await flushBlock(this.deflate, encodeHeaderBlock({}))]),
          ),
        );
        if ((frame.flags & FLAG_FIN) !== 0) stream.received(Buffer.alloc(0), true);
        this.onStream(stream);
        return;
      }
      case HEADERS:
        // Read only to keep the header context in step; no handler here uses late headers.
        await flushBlock(this.inflate, payload.subarray(4));
        return;
      case RST_STREAM: {
        this.streams.get(payload.readUInt32BE(0) & 0x7fffffff)?.peerReset();
        return;
      }
      case PING:
        await this.send(async () => controlFrame(PING, 0, payload));
        return;
      case GOAWAY:
        this.close();
        return;
      default:
      // SETTINGS and WINDOW_UPDATE: nothing here depends on them.
    }
  }

  /** Queues a frame after every frame before it; resolves once the socket took it. */
  private send(build: () => Promise<Buffer> | Buffer): Promise<void> {
    const sent = this.outgoing.then(async () => {
      if (this.closed) throw new Error('the SPDY connection is closed');
      const bytes = await build();
      await new Promise<void>((resolve, reject) =>
        this.socket.write(bytes, (err) => (err ? reject(err) : resolve())),
      );
    });
    this.outgoing = sent.catch(() => undefined);
    return sent;
  }

  sendData(streamId: number, data: Buffer, fin: boolean): Promise<void> {
    const frames: Buffer[] = [];
    for (let at = 0; at < data.length; at += MAX_DATA_PAYLOAD)
      frames.push(dataFrame(streamId, false, data.subarray(at, at + MAX_DATA_PAYLOAD)));
    if (fin) frames.push(dataFrame(streamId, true, Buffer.alloc(0)));
    return this.send(() => Buffer.concat(frames));
  }

  sendReset(streamId: number, status: number): void {
    void this.send(() =>
      controlFrame(RST_STREAM, 0, Buffer.concat([uint32(streamId), uint32(status)])),
    ).catch(() => undefined);
  }

  forget(streamId: number): void {
    this.streams.delete(streamId);
  }
}
