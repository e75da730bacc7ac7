/**
 * A DNS server the tests run on 127.0.0.1 (UDP), answering A and AAAA questions as the
 * test decides, so names can be made to resolve to loopback, or to change their answer
 * from one question to the next (rebinding). Names it has no answer for are NXDOMAIN.
 * Speaks the real wire format (RFC 1035), so Node's resolver (c-ares) asks it as it would
 * ask any server.
 */
import dgram from 'node:dgram';
import net from 'node:net';

export type DnsAnswer = (name: string, type: 'A' | 'AAAA') => string[] | null;

export interface DnsServer {
  /** host:port, for dns.Resolver.setServers and EGRESS_DNS_SERVERS. */
  address: string;
  /** Questions asked so far, as "A name" / "AAAA name". */
  questions: string[];
  stop(): Promise<void>;
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  for (;;) {
    const len = msg[i] ?? 0;
    if (len === 0) return { name: labels.join('.').toLowerCase(), end: i + 1 };
    labels.push(msg.subarray(i + 1, i + 1 + len).toString('ascii'));
    i += 1 + len;
  }
}

function ipv6Bytes(address: string): Buffer {
  const [head = '', tail = ''] = address.includes('::') ? address.split('::') : [address, ''];
  const parse = (s: string): number[] => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = parse(tail);
  const groups = [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
  const b = Buffer.alloc(16);
  for (const [i, g] of groups.entries()) b.writeUInt16BE(g, i * 2);
  return b;
}

export async function startDnsServer(answer: DnsAnswer): Promise<DnsServer> {
  const socket = dgram.createSocket('udp4');
  const questions: string[] = [];
  socket.on('message', (msg, rinfo) => {
    if (msg.length < 12) return;
    const { name, end } = readName(msg, 12);
    const qtype = msg.readUInt16BE(end);
    const question = msg.subarray(12, end + 4);
    const type = qtype === 1 ? 'A' : qtype === 28 ? 'AAAA' : null;
    if (type) questions.push(`${type} ${name}`);
    const addresses = type ? answer(name, type) : [];
    const records = (addresses ?? []).filter((a) => net.isIP(a) === (type === 'A' ? 4 : 6));
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    // QR, opcode 0, AA, RD copied, RA; rcode 3 (NXDOMAIN) when the name is unknown.
    header.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100) | 0x0080 | (addresses === null ? 3 : 0), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records.length, 6);
    const answers = records.map((a) => {
      const rdata = type === 'A' ? Buffer.from(a.split('.').map(Number)) : ipv6Bytes(a);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // pointer to the question's name
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(0, 6); // TTL 0: nobody may cache an answer
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    socket.send(Buffer.concat([header, question, ...answers]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  return {
    address: `127.0.0.1:${port}`,
    questions,
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
