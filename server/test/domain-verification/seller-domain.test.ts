import {
  DOMAIN_VERIFICATION_METHODS,
  DomainCheckError,
  challengeInstructions,
  isValidSellerDomain,
  newChallengeToken,
} from '../../src/domain/sellers/domain-verification';
import { WALLET } from './local-server';

describe('isValidSellerDomain', () => {
  it.each([
    'example.com',
    'shop.example.co.uk',
    'a.io',
    'xn--bcher-kva.example',
    'my-shop.example',
    `${'a'.repeat(63)}.com`,
    '123.example.com',
  ])('accepts %s', (domain) => expect(isValidSellerDomain(domain)).toBe(true));

  it.each([
    ['empty', ''],
    ['no dot', 'example'],
    ['uppercase', 'Example.com'],
    ['scheme', 'https://example.com'],
    ['port', 'example.com:443'],
    ['path', 'example.com/x'],
    ['userinfo', 'user@example.com'],
    ['trailing dot', 'example.com.'],
    ['empty label', 'a..com'],
    ['label starting with a hyphen', '-a.com'],
    ['label ending with a hyphen', 'a-.com'],
    ['underscore', 'my_shop.com'],
    ['label over 63 chars', `${'a'.repeat(64)}.com`],
    ['name over 253 chars', `${Array(64).fill('abc').join('.')}.com`],
    ['IPv4 literal', '127.0.0.1'],
    ['IPv4 shorthand that URL would parse as an address', '127.1'],
    ['hex IPv4 that URL would parse as an address', '0x7f.0x1'],
    ['IPv6 literal', '::1'],
    ['bracketed IPv6 literal', '[::1]'],
    ['localhost', 'localhost'],
    ['a name under .localhost', 'shop.localhost'],
    ['whitespace', 'exa mple.com'],
    ['unicode (must be punycode)', 'bücher.example'],
  ])('rejects %s', (_what, domain) => expect(isValidSellerDomain(domain)).toBe(false));
});

describe('challenge tokens and instructions', () => {
  it('makes a fresh 32-character base64url token each time', () => {
    const a = newChallengeToken();
    const b = newChallengeToken();
    expect(a).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(a).not.toBe(b);
  });

  it('gives instructions for all three methods with their location and expected value', () => {
    const token = newChallengeToken();
    const list = challengeInstructions('shop.example.com', WALLET, token);
    expect(list.map((i) => i.method)).toEqual([...DOMAIN_VERIFICATION_METHODS]);
    expect(list).toEqual([
      expect.objectContaining({
        method: 'stellar_toml',
        location: 'https://shop.example.com/.well-known/stellar.toml',
        expectedValue: `MARKETPLACE_VERIFICATION = "${token}"`,
        instructions: expect.stringContaining(WALLET),
      }),
      expect.objectContaining({
        method: 'dns_txt',
        location: '_marketplace-verification.shop.example.com',
        expectedValue: `marketplace-verification=${token}`,
      }),
      expect.objectContaining({
        method: 'https_well_known',
        location: 'https://shop.example.com/.well-known/marketplace-verification.txt',
        expectedValue: token,
      }),
    ]);
  });

  it('refuses to give instructions for an invalid domain', () => {
    expect(() => challengeInstructions('localhost', WALLET, newChallengeToken())).toThrow(DomainCheckError);
    try {
      challengeInstructions('http://x.com', WALLET, newChallengeToken());
    } catch (err) {
      expect((err as DomainCheckError).reason).toBe('invalid_domain');
    }
  });

  it('refuses a malformed wallet address or token', () => {
    expect(() => challengeInstructions('example.com', 'not-a-wallet', newChallengeToken())).toThrow(/wallet/);
    expect(() => challengeInstructions('example.com', WALLET, 'short')).toThrow(/token/);
  });
});
