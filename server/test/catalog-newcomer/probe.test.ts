import request from 'supertest';
import { startTestService, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller } from '../support/fixtures';
let svc: TestService;
beforeAll(async () => { svc = await startTestService(); });
afterAll(async () => { await svc.stop(); });
it('probe', async () => {
  const s = await signUpSeller(svc.app);
  for (const over of [{ amount: '1,5' }, { amount: '1,5', network: 'stellar:foo', assetCode: 'EURC' }, { network: 'stellar:futurenet' }, {assetCode:'EURC'}, {payTo:'GABC'}]) {
    const res = await request(svc.app).post('/v1/resources').set(bearer(s.apiKey)).send(resourceInput(s, over));
    console.log(JSON.stringify(over), res.status, JSON.stringify(res.body.error));
    const v = await request(svc.app).post('/v1/discovery/validate').set(bearer(s.apiKey)).send({ sellerId: s.id, resource: resourceInput(s, over) });
    console.log('validate', v.status, JSON.stringify(v.body));
  }
});
