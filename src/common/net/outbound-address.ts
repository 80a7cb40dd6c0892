import ipaddr from 'ipaddr.js';

/**
 * Which addresses a server-side request may reach: globally routable unicast only. Every special-purpose range of
 * the IANA registries is refused (loopback, RFC 1918, link-local, CGNAT, benchmarking, documentation, multicast,
 * reserved, broadcast, 0/8; IPv6 unique-local, link-local, multicast, discard, documentation, ORCHID, …), and an
 * IPv6 address that embeds an IPv4 address (mapped, compatible, SIIT, NAT64, 6to4, Teredo) is judged by the IPv4
 * address inside, so `[::7f00:1]` or `[64:ff9b::a00:1]` cannot reach 127.0.0.1 or 10.0.0.1.
 */
export type AddressVerdict = { allowed: true } | { allowed: false; range: string };

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parse('2000::');

function judgeV4(address: ipaddr.IPv4): AddressVerdict {
  const range = address.range();
  return range === 'unicast' ? { allowed: true } : { allowed: false, range };
}

/** The IPv4 address an IPv6 address carries by a transition mechanism, or null when it carries none. */
function embeddedV4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = address.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  // ::a.b.c.d (IPv4-compatible, deprecated), ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (SIIT).
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && (p[4] === 0 || p[4] === 0xffff)) {
    if (p[4] === 0 && (p[5] === 0 || p[5] === 0xffff)) return v4(p[6], p[7]);
    if (p[4] === 0xffff && p[5] === 0) return v4(p[6], p[7]);
  }
  const range = address.range();
  if (range === 'rfc6052') return v4(p[6], p[7]);
  if (range === '6to4') return v4(p[1], p[2]);
  return null;
}

export function judgeAddress(raw: string): AddressVerdict {
  if (!ipaddr.isValid(raw)) return { allowed: false, range: 'invalid' };
  const address = ipaddr.parse(raw);
  if (address.kind() === 'ipv4') return judgeV4(address as ipaddr.IPv4);
  const v6 = address as ipaddr.IPv6;
  if (v6.parts.every((part) => part === 0)) return { allowed: false, range: 'unspecified' };
  if (v6.parts.slice(0, 7).every((part) => part === 0) && v6.parts[7] === 1)
    return { allowed: false, range: 'loopback' };
  const inner = embeddedV4(v6);
  if (inner) {
    const verdict = judgeV4(inner);
    return verdict.allowed
      ? verdict
      : { allowed: false, range: `${v6.range() === 'unicast' ? 'ipv4Compatible' : v6.range()}:${verdict.range}` };
  }
  const range = v6.range();
  if (range === 'teredo') {
    // Server address in bits 32..63, client address (inverted) in the last 32 bits: both must be public.
    const p = v6.parts;
    const server = judgeV4(new ipaddr.IPv4([p[2] >> 8, p[2] & 0xff, p[3] >> 8, p[3] & 0xff]));
    const client = judgeV4(new ipaddr.IPv4([(~p[6] >> 8) & 0xff, ~p[6] & 0xff, (~p[7] >> 8) & 0xff, ~p[7] & 0xff]));
    if (!server.allowed) return { allowed: false, range: `teredo:${server.range}` };
    if (!client.allowed) return { allowed: false, range: `teredo:${client.range}` };
    return { allowed: true };
  }
  if (range !== 'unicast') return { allowed: false, range };
  // Only 2000::/3 is allocated for global unicast; anything else unnamed is unassigned space.
  if (!v6.match(GLOBAL_UNICAST_V6, 3)) return { allowed: false, range: 'unassigned' };
  return { allowed: true };
}

export function isPublicAddress(raw: string): boolean {
  return judgeAddress(raw).allowed;
}
