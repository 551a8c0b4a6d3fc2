import { Keypair, rpc } from '@stellar/stellar-sdk';
import { LocalNetwork, LocalNetworkOptions, startLocalNetwork } from '../../src/ledger/local-network';

/** A network on a free port whose ledgers close only when the test says so. */
export function startTestNetwork(opts: LocalNetworkOptions = {}): Promise<LocalNetwork> {
  return startLocalNetwork({ port: 0, ledgerCloseMs: 0, ...opts });
}

export function rpcClient(network: LocalNetwork): rpc.Server {
  return new rpc.Server(network.rpcUrl, { allowHttp: true });
}

/** A funded account holding `usdc` of the network's USDC (trustline included). */
export async function fundedAccount(network: LocalNetwork, usdc = '100'): Promise<Keypair> {
  const keypair = Keypair.random();
  await network.fundAccount(keypair.publicKey());
  if (usdc !== '0') await network.faucet(keypair.publicKey(), 'USDC', usdc);
  return keypair;
}

/** Runs `work` while closing a ledger every `everyMs`, like a running network, for clients that poll. */
export async function whileLedgersClose<T>(network: LocalNetwork, work: Promise<T>, everyMs = 50): Promise<T> {
  const timer = setInterval(() => void network.closeLedger(), everyMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
