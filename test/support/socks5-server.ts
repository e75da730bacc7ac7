/**
 * A SOCKS5 proxy the tests run on 127.0.0.1 (RFC 1928 CONNECT, with RFC 1929 user name and
 * password authentication when credentials are given): it relays to loopback targets only
 * and records what it was asked for and the bytes it relayed.
 */
import net from 'node:net';

export interface Socks5Server {
  port: number;
  /** "user target" for every CONNECT it relayed. */
  seen: string[];
  /** Bytes relayed between clients and targets, counted when connections close. */
  bytes(): number;
  stop(): Promise<void>;
}

export async function startSocks5(credentials: { username: string; password: string } | null): Promise<Socks5Server> {
  const seen: string[] = [];
  let relayed = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    let user = '';
    let stage: 'greeting' | 'auth' | 'request' = 'greeting';
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (stage === 'greeting') {
        if (buf.length < 2 || buf.length < 2 + (buf[1] ?? 0)) return;
        const methods = [...buf.subarray(2, 2 + (buf[1] ?? 0))];
        buf = buf.subarray(2 + (buf[1] ?? 0));
        const want = credentials ? 2 : 0;
        if (!methods.includes(want)) {
          client.end(Buffer.from([5, 0xff]));
          return;
        }
        client.write(Buffer.from([5, want]));
        stage = credentials ? 'auth' : 'request';
      }
      if (stage === 'auth') {
        if (buf.length < 2) return;
        const ulen = buf[1] ?? 0;
        if (buf.length < 3 + ulen) return;
        const plen = buf[2 + ulen] ?? 0;
        if (buf.length < 3 + ulen + plen) return;
        user = buf.subarray(2, 2 + ulen).toString();
        const pass = buf.subarray(3 + ulen, 3 + ulen + plen).toString();
        buf = buf.subarray(3 + ulen + plen);
        if (user !== credentials?.username || pass !== credentials.password) {
          client.end(Buffer.from([1, 1]));
          return;
        }
        client.write(Buffer.from([1, 0]));
        stage = 'request';
      }
      if (stage === 'request') {
        if (buf.length < 5) return;
        const atyp = buf[3];
        let host = '';
        let end = 0;
        if (atyp === 1) {
          if (buf.length < 10) return;
          host = [...buf.subarray(4, 8)].join('.');
          end = 8;
        } else if (atyp === 3) {
          const len = buf[4] ?? 0;
          if (buf.length < 7 + len) return;
          host = buf.subarray(5, 5 + len).toString();
          end = 5 + len;
        } else {
          client.end(Buffer.from([5, 8, 0, 1, 0, 0, 0, 0, 0, 0]));
          return;
        }
        const port = buf.readUInt16BE(end);
        const rest = buf.subarray(end + 2);
        client.off('data', onData);
        // Loopback only: the tests' network rule.
        if (host !== '127.0.0.1' && host !== 'localhost') {
          client.end(Buffer.from([5, 2, 0, 1, 0, 0, 0, 0, 0, 0]));
          return;
        }
        seen.push(`${user} ${host}:${port}`);
        const target = net.connect(port, '127.0.0.1', () => {
          client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]));
          if (rest.length) target.write(rest);
          client.pipe(target);
          target.pipe(client);
        });
        sockets.add(target);
        target.on('close', () => {
          relayed += target.bytesRead + target.bytesWritten;
          sockets.delete(target);
          client.destroy();
        });
        target.on('error', () => client.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0])));
        client.on('close', () => target.destroy());
      }
    };
    client.on('data', onData);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    seen,
    bytes: () => relayed,
    stop: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
