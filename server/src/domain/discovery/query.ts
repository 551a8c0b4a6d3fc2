import synonymData from './synonyms.json';

/**
 * The search query language (ranking strategy pg-fts-recall-v3). Any string is a query:
 *
 * - plain words are *concepts*: a result need not match all of them; it is ranked by how many it matches and how
 *   well (data/search-repository.ts: IDF-weighted, by field). Punctuation separates words (so "(AQI)" is the word
 *   AQI and "speech-to-text" three words); case does not matter; PostgreSQL's English stemmer applies.
 * - "quoted phrases" must match (as a phrase) and their words also count as concepts;
 * - -word and -"a phrase" exclude results that contain them;
 * - the last word also matches as a prefix (an agent typing "weath");
 * - a word or words found in the synonym table (synonyms.json, a data file) also match every other member of its
 *   group; a word the index does not know is also matched by the most similar indexed words (typo tolerance: pg_trgm
 *   over the vocabulary, in the repository).
 *
 * Bounded: at most MAX_WORDS words (the rest is ignored), each at most MAX_WORD_LENGTH characters.
 */
export interface ParsedQuery {
  /** Plain words (lower case, in order), each a concept; phrase words included. */
  words: string[];
  /** Quoted phrases that must match, as lists of words. */
  phrases: string[][];
  /** Excluded words or phrases (each a list of words). */
  excluded: string[][];
  /** Whether the last word of `words` may also match as a prefix. */
  lastIsPrefix: boolean;
  /** For each word (same index): synonym alternatives, each a list of words that must all match. */
  synonyms: string[][][];
}

export const MAX_WORDS = 12;
const MAX_WORD_LENGTH = 40;
const MAX_EXCLUDED = 6;

/** Words dropped before synonym matching (PostgreSQL's English configuration drops them from documents too). */
const STOP = new Set(
  (
    'a an the to and or of for in on with by from at as is are be into via that this these those which what how ' +
    'i me my we our you your it its can some any get find need want api apis service endpoint tool please'
  ).split(' '),
);

/** Splits text into words: runs of letters and digits (any script), lower case. */
export function words(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.slice(0, MAX_WORD_LENGTH));
}

/** A light normal form for synonym matching only: lower case, a plural -s / -es dropped. */
function norm(w: string): string {
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  return w;
}

interface SynonymIndex {
  /** Member phrases (normalised content words) and the group they belong to. */
  members: Array<{ key: string[]; group: number }>;
  groups: string[][][];
}

function content(ws: string[]): string[] {
  return ws.filter((w) => !STOP.has(w)).map(norm);
}

/** The synonym table, checked: every group has at least two members, and no member is empty after stop words. */
export function loadSynonyms(data: { groups: string[][] } = synonymData): SynonymIndex {
  const members: SynonymIndex['members'] = [];
  const groups: string[][][] = [];
  for (const [g, group] of data.groups.entries()) {
    if (!Array.isArray(group) || group.length < 2) throw new Error(`synonym group ${g} needs at least two members`);
    const phrases = group.map((m) => words(m));
    for (const [i, p] of phrases.entries()) {
      const key = content(p);
      if (key.length === 0) throw new Error(`synonym "${group[i]}" has no content word`);
      members.push({ key, group: g });
    }
    groups.push(phrases.map((p) => p.filter((w) => !STOP.has(w))));
  }
  // Longest members first, so "reverse geocode" wins over "geocode".
  members.sort((a, b) => b.key.length - a.key.length);
  return { members, groups };
}

const SYNONYMS = loadSynonyms();

/** The synonym alternatives of each word of `ws` (content words), as lists of words. */
export function synonymAlternatives(ws: string[], index: SynonymIndex = SYNONYMS): string[][][] {
  const keys = ws.map(norm);
  const out: string[][][] = ws.map(() => []);
  const taken = new Set<string>();
  for (const m of index.members) {
    for (let i = 0; i + m.key.length <= keys.length; i++) {
      if (!m.key.every((k, j) => keys[i + j] === k)) continue;
      const alternatives = index.groups[m.group].filter((p) => content(p).join(' ') !== m.key.join(' '));
      for (let j = i; j < i + m.key.length; j++) {
        for (const alt of alternatives) {
          const id = `${j}:${alt.join(' ')}`;
          if (taken.has(id)) continue;
          taken.add(id);
          out[j].push(alt);
        }
      }
    }
  }
  return out;
}

export function parseQuery(q: string): ParsedQuery {
  const phrases: string[][] = [];
  const excluded: string[][] = [];
  const plain: string[] = [];
  let lastIsPrefix = false;
  const token = /(-?)"([^"]*)"?|(\S+)/g;
  for (let m = token.exec(q); m; m = token.exec(q)) {
    if (m[2] !== undefined) {
      const ws = words(m[2]);
      if (ws.length === 0) continue;
      if (m[1] === '-') excluded.push(ws);
      else {
        phrases.push(ws);
        plain.push(...ws);
      }
      lastIsPrefix = false;
      continue;
    }
    const raw = m[3];
    const ws = words(raw);
    if (ws.length === 0) continue;
    if (raw.startsWith('-') && raw.length > 1 && /^-[\p{L}\p{N}]/u.test(raw)) {
      excluded.push(ws);
      continue;
    }
    plain.push(...ws);
    lastIsPrefix = /[\p{L}\p{N}]$/u.test(raw);
  }
  const content = plain.filter((w) => !STOP.has(w));
  // A query of stop words only ("the api") still searches for them.
  const kept = (content.length ? content : plain).slice(0, MAX_WORDS);
  const unique = [...new Set(kept)];
  if (unique.length < kept.length || kept.length < plain.filter((w) => !STOP.has(w)).length)
    lastIsPrefix = lastIsPrefix && unique[unique.length - 1] === plain[plain.length - 1];
  else lastIsPrefix = lastIsPrefix && kept[kept.length - 1] === plain[plain.length - 1];
  return {
    words: unique,
    phrases: phrases.slice(0, MAX_EXCLUDED),
    excluded: excluded.slice(0, MAX_EXCLUDED),
    lastIsPrefix,
    synonyms: synonymAlternatives(unique),
  };
}

/** What the index knows about one word (data/search-repository.ts resolveWords). */
export interface ResolvedWord {
  /** The word's lexeme (English stemmer), or null for a stop word. */
  lexeme: string | null;
  /** Discoverable documents carrying the lexeme (the vocabulary's count; 0 when unknown). */
  ndoc: number;
  /** Documents carrying a lexeme that starts with it (asked only for the prefix word). */
  prefixNdoc: number;
  /** For a query word the vocabulary does not know: the most similar indexed lexemes (pg_trgm). */
  fixes: Array<{ lexeme: string; ndoc: number }>;
  /** For the prefix word: the indexed lexemes it begins, the most frequent first (at most PREFIX_READS). */
  prefixWords?: string[];
}

/** How many of a prefix's completions (the most frequent) the candidate step reads; scoring matches them all. */
export const PREFIX_READS = 8;

export interface ResolvedQuery {
  /** One per ParsedQuery word. */
  words: ResolvedWord[];
  /** One per distinct synonym word (see synonymWords). */
  synonyms: Map<string, ResolvedWord>;
  /** Each required phrase and each exclusion as tsquery text (phraseto_tsquery), '' for stop words only. */
  phrases: string[];
  excluded: string[];
  /** Discoverable documents in the index (estimate). */
  total: number;
  /** The vocabulary's generation the words were resolved at (search_index_state), when the reader knows it. */
  generation?: string;
}

/** The distinct words of every synonym alternative of a parsed query. */
export function synonymWords(parsed: ParsedQuery): string[] {
  return [...new Set(parsed.synonyms.flat(2))];
}

export interface Concept {
  /** Alternatives, each a list of lexemes that must all match, with whether the lexeme is a prefix. */
  alternatives: Array<Array<{ lexeme: string; prefix: boolean }>>;
  /** Documents the concept's alternatives may match (sum of their counts: an upper bound). */
  reach: number;
  /** Document frequency for the IDF weight. */
  df: number;
}

const lit = (l: string, prefix: boolean, label = '') =>
  `'${l.replace(/\\/g, '\\\\').replace(/'/g, "''")}'${prefix || label ? ':' : ''}${prefix ? '*' : ''}${label}`;

function conceptQuery(c: Concept, label = ''): string {
  return c.alternatives.map((alt) => `(${alt.map((t) => lit(t.lexeme, t.prefix, label)).join(' & ')})`).join(' | ');
}

/** The concepts of a query: each word with its prefix, typo corrections and synonyms as alternatives. */
export function concepts(parsed: ParsedQuery, resolved: ResolvedQuery): Concept[] {
  const out: Concept[] = [];
  const seen = new Set<string>();
  for (const [i, w] of resolved.words.entries()) {
    const alternatives: Concept['alternatives'] = [];
    const add = (alt: Array<{ lexeme: string; prefix: boolean }>) => {
      const key = alt.map((t) => `${t.lexeme}${t.prefix ? '*' : ''}`).join('&');
      if (alt.length && !alternatives.some((a) => a.map((t) => `${t.lexeme}${t.prefix ? '*' : ''}`).join('&') === key))
        alternatives.push(alt);
    };
    let reach = 0;
    let df = w.ndoc;
    if (w.lexeme) {
      add([{ lexeme: w.lexeme, prefix: false }]);
      reach += w.ndoc;
    }
    const isLast = i === resolved.words.length - 1;
    if (w.lexeme && isLast && parsed.lastIsPrefix && w.lexeme.length >= 3) {
      add([{ lexeme: w.lexeme, prefix: true }]);
      reach += w.prefixNdoc;
    }
    for (const f of w.fixes) {
      add([{ lexeme: f.lexeme, prefix: false }]);
      reach += f.ndoc;
      df = df || f.ndoc;
    }
    for (const alt of parsed.synonyms[i] ?? []) {
      const lexemes = alt.map((sw) => resolved.synonyms.get(sw)).filter((r): r is ResolvedWord => Boolean(r?.lexeme));
      if (lexemes.length === 0) continue;
      add(lexemes.map((r) => ({ lexeme: r.lexeme as string, prefix: false })));
      reach += Math.min(...lexemes.map((r) => r.ndoc));
    }
    if (alternatives.length === 0) continue;
    const key = conceptQuery({ alternatives, reach, df });
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ alternatives, reach, df: Math.max(df, 1) });
  }
  return out;
}

/**
 * One search over the impact-ordered index (data/search-repository.ts): which terms' best postings to read as
 * candidates, how many of each and for which concept, and the concepts' match queries for exact scoring.
 */
export interface ImpactPlan {
  /**
   * Terms whose best postings (by rank) are read, how many (every posting, up to the cap, for a rare concept's
   * terms) and the concept (1..n) a posting of the term counts for in the approximate score.
   */
  reads: Array<{ term: string; limit: number; concept: number }>;
  /** Per concept: its match query, the same restricted to fields A/B/C/D (tsquery text), and its IDF weight (BM25's).
   * */
  concepts: { q: string[]; a: string[]; b: string[]; c: string[]; d: string[]; idf: number[] };
  idfSum: number;
  /** The required phrases and exclusions as one tsquery (text), or null. */
  required: string | null;
}

/**
 * The impact plan: the query's concepts; the rare ones (ascending reach while the sum stays within `rareBudget`)
 * read up to `rareCap` postings per term (all of them, by the vocabulary's counts), the others the best
 * `candidates`. An alternative of several words is read through its rarest word (a document matching the
 * alternative carries it); a prefix through its PREFIX_READS most frequent completions.
 */
export function planImpact(
  parsed: ParsedQuery,
  resolved: ResolvedQuery,
  opts: { rareBudget: number; rareCap: number; candidates: number },
): ImpactPlan | null {
  const cs = concepts(parsed, resolved);
  if (cs.length === 0) return null;
  const ndoc = new Map<string, number>();
  for (const w of [...resolved.words, ...resolved.synonyms.values()]) {
    if (w.lexeme) ndoc.set(w.lexeme, w.ndoc);
    for (const f of w.fixes) ndoc.set(f.lexeme, f.ndoc);
  }
  const completions = new Map<string, string[]>();
  for (const w of resolved.words) if (w.lexeme && w.prefixWords) completions.set(w.lexeme, w.prefixWords);
  const rare = new Set<Concept>();
  let used = 0;
  for (const c of [...cs].sort((a, b) => a.reach - b.reach)) {
    if (used + c.reach > opts.rareBudget) break;
    rare.add(c);
    used += c.reach;
  }
  const reads = new Map<string, ImpactPlan['reads'][number]>();
  for (const [ci, c] of cs.entries()) {
    const limit = rare.has(c) ? opts.rareCap : opts.candidates;
    const read = (term: string) => {
      const key = `${ci}:${term}`;
      if (!reads.has(key)) reads.set(key, { term, limit, concept: ci + 1 });
    };
    for (const alt of c.alternatives) {
      if (alt.length === 1 && alt[0].prefix) (completions.get(alt[0].lexeme) ?? []).forEach(read);
      else read([...alt].sort((a, b) => (ndoc.get(a.lexeme) ?? 0) - (ndoc.get(b.lexeme) ?? 0))[0].lexeme);
    }
  }
  const total = Math.max(resolved.total, ...cs.map((c) => c.df));
  const idf = cs.map((c) => Math.log(1 + (total - c.df + 0.5) / (c.df + 0.5)));
  const required = [
    ...resolved.phrases.filter((p) => p !== '').map((p) => `(${p})`),
    ...resolved.excluded.filter((p) => p !== '').map((p) => `!(${p})`),
  ];
  return {
    reads: [...reads.values()],
    concepts: {
      q: cs.map((c) => conceptQuery(c)),
      a: cs.map((c) => conceptQuery(c, 'A')),
      b: cs.map((c) => conceptQuery(c, 'B')),
      c: cs.map((c) => conceptQuery(c, 'C')),
      d: cs.map((c) => conceptQuery(c, 'D')),
      idf,
    },
    idfSum: idf.reduce((a, b) => a + b, 0) || 1,
    required: required.length ? required.join(' & ') : null,
  };
}
