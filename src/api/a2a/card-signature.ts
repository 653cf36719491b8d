/**
 * The agent card's signature (issue 53; A2A 1.0 §8.4 "Agent Card Signing", proto
 * `AgentCardSignature`; docs/api/a2a.md#the-cards-signature): a JWS (RFC 7515, flattened JSON
 * parts `protected` and `signature`, detached payload) by the server's checkpoint key (Ed25519,
 * `alg` EdDSA, RFC 8037) over the card's canonical form.
 *
 * The canonical form (A2A 1.0 §8.4.1, §8.4.3 steps 3–5): the card without `signatures`, with
 * every empty value removed (null, "", [] and {}, recursively: the default-value removal the
 * official SDKs apply, @a2a-js/sdk `canonicalizeAgentCard` and a2a-python's `clean_empty`),
 * serialised by JCS (RFC 8785, the `canonicalize` package by an author of RFC 8785). The card
 * holds only fields of the A2A 1.0 schema and no proto default of a non-optional field, so the
 * SDKs' proto round trip leaves it unchanged and their payload is these bytes (tested with the
 * SDK's verifier in test/http/a2a-card-signature.test.mjs).
 *
 * The protected header, serialised in this fixed order: `{"alg":"EdDSA","typ":"JOSE","kid":…,
 * "jwk":{"kty":"OKP","crv":"Ed25519","x":…}}`: `kid` is the key's RFC 7638 JWK thumbprint
 * (SHA-256, base64url), `jwk` the public key itself (RFC 7515 §4.1.3), which a verifier compares
 * with the key it pinned (`checkpointKey` in GET /api/status) and never trusts on its own.
 *
 * Ed25519 is deterministic, so a card signed twice with one key is the same bytes: across
 * restarts, and across followers holding the leader's key (FORUM_CHECKPOINT_KEY).
 *
 * Domain separation from the checkpoint notes the same key signs (src/tlog/note.ts): a JWS
 * signing input is two base64url texts joined by a dot (no newline), a signed note's text is
 * lines ending in newlines, so no signature of one kind verifies as the other.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** The key that signs the card: the checkpoint key (src/tlog/checkpoints.ts `Checkpoints`). */
export interface CardSigner {
  /** The raw Ed25519 public key, 32 bytes. */
  readonly publicKey: Buffer;
  /** The Ed25519 signature (64 bytes) of `data`. */
  sign(data: Buffer): Buffer;
}

/** One A2A AgentCardSignature (proto JSON form): base64url protected header and signature. */
export interface AgentCardSignature {
  protected: string;
  signature: string;
}

/**
 * `value` with every empty value removed (null, undefined, "", [] and {}, recursively; an array
 * or object left empty by the removal goes too): A2A 1.0 §8.4.1's default-value removal as the
 * official SDKs apply it. Output: the cleaned value, or undefined when nothing is left.
 */
function withoutEmpty(value: unknown): unknown {
  if (value === null || value === undefined || value === '') return undefined;
  if (Array.isArray(value)) {
    const items = value.map(withoutEmpty).filter((v) => v !== undefined);
    return items.length > 0 ? items : undefined;
  }
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const c = withoutEmpty(v);
      if (c !== undefined) out[k] = c;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }
  return value;
}

/**
 * The bytes the card's signature covers (see the module doc): JCS of the card without
 * `signatures` and without empty values. Input: the card as an object (schemas/AgentCard.json).
 */
export function cardSigningPayload(card: Record<string, unknown>): string {
  const { signatures: _signatures, ...rest } = card;
  return canonicalize(withoutEmpty(rest) ?? {})!;
}

/**
 * The public key as an RFC 8037 JWK, its members in RFC 7638's order (crv, kty, x), and the key's
 * RFC 7638 thumbprint (base64url SHA-256 of that JSON), the header's `kid`.
 */
function jwkOf(publicKey: Buffer): { jwk: { kty: 'OKP'; crv: 'Ed25519'; x: string }; kid: string } {
  const x = publicKey.toString('base64url');
  const kid = createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
  return { jwk: { kty: 'OKP', crv: 'Ed25519', x }, kid };
}

/**
 * The card with `signatures: [one AgentCardSignature]` appended (the card's other members keep
 * their order). Input: the unsigned card and the signer. Deterministic: the same card and key give
 * the same bytes.
 */
export function signAgentCard(card: Record<string, unknown>, signer: CardSigner): Record<string, unknown> {
  const { jwk, kid } = jwkOf(signer.publicKey);
  const protectedHeader = Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'JOSE', kid, jwk }), 'utf8').toString('base64url');
  const signingInput = `${protectedHeader}.${Buffer.from(cardSigningPayload(card), 'utf8').toString('base64url')}`;
  const signature: AgentCardSignature = { protected: protectedHeader, signature: signer.sign(Buffer.from(signingInput, 'ascii')).toString('base64url') };
  return { ...card, signatures: [signature] };
}
