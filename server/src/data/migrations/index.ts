import type { Migration } from './types';
import { migration as m0001 } from './0001-catalog-and-sellers';
import { migration as m0002 } from './0002-payments';
import { migration as m0003 } from './0003-dead-letter-jobs';
import { migration as m0004 } from './0004-discovery';
import { migration as m0005 } from './0005-payment-safety';
import { migration as m0006 } from './0006-security';
import { migration as m0008 } from './0008-operations';
import { migration as m0009 } from './0009-search-candidates';
import { migration as m0010 } from './0010-search-score-tiers';
import { migration as m0011 } from './0011-search-gin-pending-limit';
import { migration as m0012 } from './0012-receipt-signing-keys';
import { migration as m0013 } from './0013-facilitator-accountability';
import { migration as m0014 } from './0014-unique-endpoints-and-verified-domains';
import { migration as m0022 } from './0022-search-ranked-recall';
import { migration as m0023 } from './0023-search-vocabulary-index';
import { migration as m0032 } from './0032-api-key-lifecycle-and-retention';
import { migration as m0042 } from './0042-seller-receipt-keys';
import { migration as m0043 } from './0043-fees-per-party-and-payer-turns';
import { migration as m0050 } from './0050-proven-hosts';
import { migration as m0060 } from './0060-receipt-key-owners';
import { migration as m0075 } from './0075-channel-lease-parties';
import { migration as m0080 } from './0080-x402-answers';
import { migration as m0085 } from './0085-bazaar-v2-metadata';
import { migration as m0090 } from './0090-settlement-fee-evidence';
import { migration as m0100 } from './0100-search-postings';
import { migration as m0110 } from './0110-trust-signals';
import { migration as m0120 } from './0120-liveness-claims';
import { migration as m0125 } from './0125-search-signal-dirty';
import { migration as m0135 } from './0135-global-fee-shards';
import { migration as m0132 } from './0132-postings-filters';

/** Every migration, in order. New ones are appended; applied ones are never edited. */
export const MIGRATIONS: Migration[] = [
  m0001,
  m0002,
  m0003,
  m0004,
  m0006,
  m0008,
  m0005,
  m0009,
  m0012,
  m0010,
  m0011,
  m0013,
  m0032,
  m0022,
  m0014,
  m0042,
  m0023,
  m0043,
  m0060,
  m0050,
  m0075,
  m0080,
  m0085,
  m0090,
  m0100,
  m0110,
  m0120,
  m0125,
  m0135,
  m0132,
];
