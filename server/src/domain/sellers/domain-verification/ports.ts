/** What the checks need from the outside world; createSafeFetcher and createDnsTxtResolver are the real ones. */
export interface DomainCheckPorts {
  /** GET a URL; resolves with the status and (for a 200) the body, rejects with DomainCheckError. */
  fetchText(url: string): Promise<{ status: number; body: string }>;
  /** TXT records of a name, each as its chunks; [] when there are none. Rejects with DomainCheckError. */
  resolveTxt(name: string): Promise<string[][]>;
}

export interface DomainCheckInput {
  domain: string;
  walletAddress: string;
  token: string;
}

export interface DomainCheckOptions {
  /** Origin the HTTPS checks fetch from; default `https://${domain}`. Tests point it at a local server. */
  urlBase?: (domain: string) => string;
}
