import { xdr } from '@stellar/stellar-sdk';

/** Records which ledger entries a host invocation read and wrote, to build or check a Soroban footprint. */
export class FootprintRecorder {
  private readonly readOnly = new Map<string, xdr.LedgerKey>();
  private readonly readWrite = new Map<string, xdr.LedgerKey>();

  read(key: xdr.LedgerKey): void {
    const id = key.toXDR('base64');
    if (!this.readWrite.has(id)) this.readOnly.set(id, key);
  }

  write(key: xdr.LedgerKey): void {
    const id = key.toXDR('base64');
    this.readOnly.delete(id);
    this.readWrite.set(id, key);
  }

  toFootprint(): xdr.LedgerFootprint {
    return new xdr.LedgerFootprint({ readOnly: [...this.readOnly.values()], readWrite: [...this.readWrite.values()] });
  }

  /** Describes the first access the declared footprint does not allow, or undefined when all are covered. */
  violationOf(declared: xdr.LedgerFootprint): string | undefined {
    const ro = new Set(declared.readOnly().map((k) => k.toXDR('base64')));
    const rw = new Set(declared.readWrite().map((k) => k.toXDR('base64')));
    for (const [id, key] of this.readWrite) {
      if (!rw.has(id)) return `write of a ${key.switch().name} entry outside the footprint's read-write set`;
    }
    for (const [id, key] of this.readOnly) {
      if (!ro.has(id) && !rw.has(id)) return `read of a ${key.switch().name} entry outside the footprint`;
    }
    return undefined;
  }

  keys(): { readOnly: xdr.LedgerKey[]; readWrite: xdr.LedgerKey[] } {
    return { readOnly: [...this.readOnly.values()], readWrite: [...this.readWrite.values()] };
  }
}
