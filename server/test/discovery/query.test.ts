import request from 'supertest';
import { startTestService, type TestService } from '../support/test-service';
import { signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { catalog, draft, LONG, waitIndexed } from './helpers';
import { loadSynonyms, parseQuery, synonymAlternatives } from '../../src/domain/discovery/query';
import synonymData from '../../src/domain/discovery/synonyms.json';
import { createSearchIndexRepository } from '../../src/data/search-index-repository';

describe('the query language (pure)', () => {
  it(
    'splits words on punctuation, keeps quoted phrases and -exclusions, drops stop words, marks the last word as ' +
      'a prefix',
    () => {
      const p = parseQuery('Air Quality Index (AQI) "real time" -pollen');
      expect(p.words).toEqual(['air', 'quality', 'index', 'aqi', 'real', 'time']);
      expect(p.phrases).toEqual([['real', 'time']]);
      expect(p.excluded).toEqual([['pollen']]);
      expect(parseQuery('convert a street address to latitude').words).toEqual([
        'convert',
        'street',
        'address',
        'latitude',
      ]);
      expect(parseQuery('weath').lastIsPrefix).toBe(true);
      expect(parseQuery('weather "forecast"').lastIsPrefix).toBe(false);
    },
  );

  it('bounds what it keeps: at most 12 words of at most 40 characters', () => {
    const p = parseQuery(Array.from({ length: 40 }, (_, i) => `w${i}${'x'.repeat(60)}`).join(' '));
    expect(p.words.length).toBe(12);
    expect(p.words.every((w) => w.length <= 40)).toBe(true);
  });

  it('every synonym group of the data file has two members with content words, and a member finds the others', () => {
    expect(() => loadSynonyms()).not.toThrow();
    expect(synonymData.groups.length).toBeGreaterThan(40);
    for (const group of synonymData.groups) expect(group.length).toBeGreaterThanOrEqual(2);
    // "latitude and longitude": each word also matches geocode (and the other members of the group)
    const alts = synonymAlternatives(['latitude', 'longitude']);
    expect(alts[0].map((a) => a.join(' '))).toEqual(expect.arrayContaining(['geocode', 'address coordinates']));
    expect(synonymAlternatives(['asr'])[0].map((a) => a.join(' '))).toEqual(
      expect.arrayContaining(['transcription', 'speech recognition']),
    );
    expect(() => loadSynonyms({ groups: [['only one']] })).toThrow(/two members/);
  });
});

describe('GET /v1/discovery/search with ranked recall', () => {
  let svc: TestService;
  let seller: SignedUpSeller;
  const made: Record<string, string> = {};
  const put = async (name: string, description: string) => {
    const res = await catalog(svc.app, seller.apiKey, {
      sellerId: seller.id,
      resource: draft(seller, { name, description: `${description} ${LONG}` }),
    });
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    return res.body.resourceId as string;
  };
  const search = (q: string) => request(svc.app).get('/v1/discovery/search').query({ q });
  const ids = (res: request.Response) => (res.body.resources as Array<{ id: string }>).map((r) => r.id);

  beforeAll(async () => {
    svc = await startTestService({ runJobs: true, jobPollMs: 100 });
    seller = await signUpSeller(svc.app);
    made.aqi = await put('Air Quality Index', 'Real-time AQI with PM2.5 and ozone readings for a city.');
    made.geo = await put('Geocode Service', 'Turns postal addresses into map points.');
    made.asr = await put('Meeting Transcription', 'Converts recorded audio of meetings into written transcripts.');
    made.weather = await put('Weather Forecast', 'Hourly forecast for cities.');
    made.jacket = await put('Weatherproof Jackets', 'Outdoor clothing catalog.');
    await waitIndexed(svc.db);
    await createSearchIndexRepository(svc.db).refreshVocabulary(0);
  });
  afterAll(async () => {
    await svc.stop();
  });

  it(
    'when q holds parentheses, apostrophes or other reserved characters sent unencoded, it is a 200 with ' +
      'results, not a 400',
    async () => {
      const res = await request(svc.app).get('/v1/discovery/search?q=Air%20Quality%20Index%20(AQI)');
      expect(res.status).toBe(200);
      expect(ids(res)[0]).toBe(made.aqi);
      for (const q of [
        "what's the AQI?",
        'AQI!*',
        "O'Brien's (weather) & 100% [geo]; a=b/c",
        '日本語 天気',
        '"',
        '-',
        '()',
        '%',
        '+',
      ]) {
        const r = await search(q);
        expect({ q, status: r.status }).toEqual({ q, status: 200 });
      }
    },
  );

  it('when only some words match, the resource is found (OR), ranked above ones matching fewer words', async () => {
    const res = await search('convert a street address to latitude and longitude');
    expect(ids(res)[0]).toBe(made.geo);
  });

  it('when the query uses a synonym, a misspelling or a prefix, the meant resource is found', async () => {
    expect(ids(await search('speech to text'))[0]).toBe(made.asr);
    expect(ids(await search('wether forcast'))[0]).toBe(made.weather);
    expect(ids(await search('transcrip'))).toContain(made.asr);
  });

  it('quoted phrases must match and -words exclude', async () => {
    expect(ids(await search('"weather forecast"'))).toEqual([made.weather]);
    const res = await search('weather -jackets');
    expect(ids(res)).toContain(made.weather);
    expect(ids(res)).not.toContain(made.jacket);
  });
});
