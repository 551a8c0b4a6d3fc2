/* Operator dashboard: reads GET /v1/operations/dashboard with the operator key (kept in sessionStorage only) every
 * 5 seconds and draws the rolling one-hour series with uPlot. No framework, no CDN. */
(function () {
  'use strict';
  var KEY = 'marketplace.operatorKey';
  var REFRESH_MS = 5000;
  var charts = {};
  var timer = null;
  var $ = function (sel, root) {
    return (root || document).querySelector(sel);
  };

  function field(panel, name) {
    return $('[data-panel="' + panel + '"] [data-field="' + name + '"]');
  }
  function set(panel, name, text) {
    var el = field(panel, name);
    if (el) el.textContent = text;
  }
  function num(v, digits) {
    return v === null || v === undefined ? 'n/a' : Number(v).toFixed(digits === undefined ? 2 : digits);
  }
  function ms(v) {
    return v === null || v === undefined ? 'n/a' : Number(v).toFixed(1) + ' ms';
  }
  function secs(v) {
    if (v === null || v === undefined) return 'n/a';
    v = Math.round(v);
    if (v < 120) return v + ' s';
    if (v < 7200) return Math.round(v / 60) + ' min';
    return (v / 3600).toFixed(1) + ' h';
  }
  function when(iso) {
    return iso ? new Date(iso).toLocaleTimeString() : 'never';
  }
  function cell(text, cls) {
    var td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }
  function rows(tbody, items, build) {
    tbody.textContent = '';
    items.forEach(function (item) {
      var tr = document.createElement('tr');
      build(item).forEach(function (td) {
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
  }

  function chart(id, title, labels, data) {
    var el = document.getElementById(id);
    if (!el || typeof uPlot === 'undefined') return;
    var width = Math.max(300, el.clientWidth || 520);
    var colors = ['#1f6feb', '#d1242f', '#1a7f37', '#9a6700', '#8250df'];
    if (!charts[id] || charts[id].series.length !== labels.length + 1) {
      if (charts[id]) charts[id].destroy();
      el.textContent = '';
      charts[id] = new uPlot(
        {
          title: title,
          width: width,
          height: 160,
          series: [{}].concat(
            labels.map(function (l, i) {
              return { label: l, stroke: colors[i % colors.length], width: 1.5, spanGaps: true };
            }),
          ),
          axes: [{}, { size: 60 }],
        },
        data,
        el,
      );
    } else {
      charts[id].setData(data);
    }
  }

  function render(d) {
    var s = d.series;
    var t = s.map(function (x) {
      return x.t;
    });
    set('api', 'status', d.api.status);
    field('api', 'status').className = d.api.status;
    set('api', 'uptime', secs(d.api.uptimeSeconds));
    set('api', 'requestRate', num(d.api.requestRate));
    set('api', 'errorRate', (d.api.errorRate * 100).toFixed(1) + ' %');
    set('api', 'p50', ms(d.api.p50Ms));
    set('api', 'p95', ms(d.api.p95Ms));
    chart(
      'chart-requests',
      'Requests/s and 5xx share (last hour)',
      ['requests/s', '5xx share'],
      [
        t,
        s.map(function (x) {
          return x.requestRate;
        }),
        s.map(function (x) {
          return x.errorRate;
        }),
      ],
    );
    chart(
      'chart-latency',
      'API latency, ms',
      ['p50', 'p95'],
      [
        t,
        s.map(function (x) {
          return x.p50Ms;
        }),
        s.map(function (x) {
          return x.p95Ms;
        }),
      ],
    );

    rows(field('workers', 'workers'), d.workers, function (w) {
      return [
        cell(w.worker),
        cell(String(w.queueDepth)),
        cell(String(w.active)),
        cell(String(w.completed)),
        cell(String(w.failed), w.failed > 0 ? 'degraded' : ''),
        cell(String(w.retries)),
        cell(String(w.deadLetters), w.deadLetters > 0 ? 'down' : ''),
        cell(when(w.lastSuccessAt)),
      ];
    });
    chart(
      'chart-queue',
      'Queue depth and dead letters',
      ['queued (all workers)', 'dead letters'],
      [
        t,
        s.map(function (x) {
          return x.queueDepth;
        }),
        s.map(function (x) {
          return x.deadLetters;
        }),
      ],
    );

    set('settlement', 'settleP50', ms(d.settlement.p50Ms));
    set('settlement', 'settleP95', ms(d.settlement.p95Ms));
    set('settlement', 'settled', String(d.settlement.settled));
    set('settlement', 'failed', String(d.settlement.failed));
    chart(
      'chart-settle',
      'Settle latency p50, ms',
      ['settle p50'],
      [
        t,
        s.map(function (x) {
          return x.settleP50Ms;
        }),
      ],
    );

    rows(field('networks', 'networks'), d.networks, function (n) {
      if (!n.rpcConfigured)
        return [
          cell(n.network),
          cell('no RPC configured'),
          cell(''),
          cell('n/a'),
          cell('n/a'),
          cell('n/a'),
          cell(n.horizon || 'not configured'),
          cell(n.settlementEnabled ? 'enabled' : 'disabled'),
          cell(n.evidence),
        ];
      return [
        cell(n.network),
        cell(n.status, n.status),
        cell(n.reason || ''),
        cell(ms(n.latencyMs)),
        cell(n.latestLedger === null ? 'n/a' : String(n.latestLedger)),
        cell(secs(n.ledgerAgeSeconds)),
        cell(n.horizon || 'not configured'),
        cell(n.settlementEnabled ? 'enabled' : 'disabled'),
        cell(n.evidence),
      ];
    });
    var nets = d.networks
      .filter(function (n) {
        return s.some(function (x) {
          return n.network in x.rpcLatencyMs;
        });
      })
      .map(function (n) {
        return n.network;
      });
    chart(
      'chart-rpc',
      'RPC latency, ms',
      nets,
      [t].concat(
        nets.map(function (n) {
          return s.map(function (x) {
            return x.rpcLatencyMs[n] === undefined ? null : x.rpcLatencyMs[n];
          });
        }),
      ),
    );

    set('search', 'indexed', String(d.searchIndex.indexedResources));
    set('search', 'lag', secs(d.searchIndex.lagSeconds));
    set('search', 'fresh', d.searchIndex.fresh ? 'yes' : 'no');
    field('search', 'fresh').className = d.searchIndex.fresh ? 'ok' : 'degraded';
    set('search', 'partial', String(d.searchIndex.partialResults));
    chart(
      'chart-lag',
      'Index lag, s',
      ['lag'],
      [
        t,
        s.map(function (x) {
          return x.indexLagSeconds;
        }),
      ],
    );

    rows(field('conformance', 'conformance'), d.conformance.latest, function (r) {
      return [cell(r.network), cell(r.status, r.status), cell(r.evidence), cell(when(r.finishedAt))];
    });
    if (d.conformance.latest.length === 0)
      rows(field('conformance', 'conformance'), [1], function () {
        return [cell('no run yet'), cell(''), cell(''), cell('')];
      });
    $('#status-line').textContent =
      'refreshed ' + new Date(d.generatedAt).toLocaleTimeString() + ' · samples: ' + s.length;
  }

  function showLogin(message) {
    if (timer) clearTimeout(timer);
    $('#panels').hidden = true;
    $('#login').hidden = false;
    $('#forget').hidden = true;
    $('#login-error').textContent = message || '';
  }

  function load() {
    var key = sessionStorage.getItem(KEY);
    if (!key) return showLogin();
    fetch('/v1/operations/dashboard', { headers: { Authorization: 'Bearer ' + key }, cache: 'no-store' })
      .then(function (res) {
        if (res.status === 401 || res.status === 403) {
          sessionStorage.removeItem(KEY);
          throw new Error('The key was refused (' + res.status + ').');
        }
        if (!res.ok) throw new Error('The service answered ' + res.status + '.');
        return res.json();
      })
      .then(function (d) {
        $('#login').hidden = true;
        $('#panels').hidden = false;
        $('#forget').hidden = false;
        render(d);
        timer = setTimeout(load, REFRESH_MS);
      })
      .catch(function (err) {
        if (!sessionStorage.getItem(KEY)) return showLogin(err.message);
        $('#status-line').textContent = 'refresh failed: ' + err.message;
        timer = setTimeout(load, REFRESH_MS);
      });
  }

  $('#login').addEventListener('submit', function (e) {
    e.preventDefault();
    sessionStorage.setItem(KEY, $('#key').value.trim());
    $('#key').value = '';
    load();
  });
  $('#forget').addEventListener('click', function () {
    sessionStorage.removeItem(KEY);
    showLogin();
  });
  load();
})();
