import request from 'supertest';
import { startTestService, type TestService } from '../support/test-service';
import { loadConfig } from '../../src/config';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc.stop();
});

describe('GET / (issue 32: the service’s address opened in a browser)', () => {
  it('serves a small page linking the docs, the dashboard, health and the quickstart', async () => {
    const res = await request(svc.app).get('/').set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    for (const href of ['/docs', '/dashboard', '/health']) expect(res.text).toContain(`href="${href}"`);
    expect(res.text).toContain('npm run quickstart');
    expect(res.text).toContain('local simulation');
    for (const href of ['/docs', '/dashboard', '/health']) expect((await request(svc.app).get(href)).status).toBe(200);
  });

  it('curl’s default Accept gets the page; a JSON client gets the same links as JSON', async () => {
    expect((await request(svc.app).get('/').set('Accept', '*/*')).headers['content-type']).toMatch(/^text\/html/);
    const json = await request(svc.app).get('/').set('Accept', 'application/json');
    expect(json.status).toBe(200);
    expect(json.body.links.map((l: { href: string }) => l.href)).toEqual(
      expect.arrayContaining(['/docs', '/dashboard', '/health']),
    );
  });
});

describe('every port the service opens can be set', () => {
  it('EMBEDDED_POSTGRES_PORT sets the embedded PostgreSQL port (default 0: a free port) and is validated', () => {
    expect(loadConfig({ EMBEDDED_POSTGRES_PORT: '5499' }).embeddedDatabasePort).toBe(5499);
    expect(loadConfig({}).embeddedDatabasePort).toBe(0);
    expect(() => loadConfig({ EMBEDDED_POSTGRES_PORT: 'five' })).toThrow(/EMBEDDED_POSTGRES_PORT must be an integer/);
  });
});
