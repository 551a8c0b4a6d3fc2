/**
 * Local development only: the marketplace lists local sellers under names ending in `.test` (RFC 2606, reserved for
 * testing; the service accepts them as seller domains with LOCAL_DEV_DOMAINS=true). Nothing resolves `.test`, so a
 * plain fetch fails with `fetch failed ... ENOTFOUND shop.test`. `localDevFetch` sends `*.test` hosts to 127.0.0.1
 * (same port, path, method, headers and body) and every other URL out unchanged. Give it to an SDK client as
 * `fetch` when you pay or call a local seller; a seller on a real domain needs nothing like it.
 */

/** True when the host is a local development name (`*.test`). */
export function isLocalDevHost(hostname: string): boolean {
  return hostname.toLowerCase().replace(/\.$/, '').endsWith('.test');
}

/** Builds a fetch that sends `*.test` hosts to 127.0.0.1 over `base` (default: the global fetch). */
export function createLocalDevFetch(base?: typeof globalThis.fetch): typeof globalThis.fetch {
  return ((input: RequestInfo | URL, init?: RequestInit) => {
    const send = base ?? globalThis.fetch;
    const request = input instanceof Request ? input : new Request(input, init);
    const url = new URL(request.url);
    if (!isLocalDevHost(url.hostname)) return send(request);
    url.hostname = '127.0.0.1';
    return send(new Request(url, request));
  }) as typeof globalThis.fetch;
}

/** fetch, with `*.test` hosts sent to 127.0.0.1 (local development only). */
export const localDevFetch: typeof globalThis.fetch = createLocalDevFetch();
