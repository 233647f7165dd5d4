// gpushare web view: draws /gpushare-scheduler/inspect and refreshes it periodically.
// Plain ES2017, no libraries. Everything is drawn by building one HTML string per section and
// assigning it once, so a refresh of 1 000+ nodes is a single DOM replacement.
//
// Query parameters (for links and tests): refresh=<seconds, 0 pauses>, filter=<text>,
// sort=<name|free-desc|free-asc|frag-desc|used-desc>, cpu=1 (show CPU-only nodes),
// limit=<max tiles drawn before "show all">, unit=<GiB|MiB> (else guessed as kubectl inspect
// gpushare does: more than 100 units per GPU is MiB).
(function () {
  'use strict';

  var INSPECT_URL = '../gpushare-scheduler/inspect';
  var MAX_REJECTION_ROWS = 100;

  var params = new URLSearchParams(window.location.search);
  var state = {
    data: null,          // last /inspect answer, with derived fields added by prepare()
    lastText: '',        // its text: an unchanged answer is not drawn again
    filter: params.get('filter') || '',
    sort: params.get('sort') || 'name',
    showCpu: params.get('cpu') === '1',
    limit: positiveInt(params.get('limit'), 2000),
    unitParam: knownUnit(params.get('unit')),  // drawn into the page: only these two
    unit: 'GiB',         // of the shared resource; set by prepare()
    refreshSeconds: params.has('refresh') ? Math.max(0, Number(params.get('refresh')) || 0) : 5,
    timer: 0,
    inFlight: false,
  };

  // Exposed for tests and for the curious: how many times the page drew and how long it took.
  var stats = window.gpushareUi = {
    fetches: 0,
    renders: 0,
    lastFetchMs: 0,     // request + JSON.parse
    lastRenderMs: 0,    // building and assigning the DOM strings
    firstRenderAt: 0,   // performance.now() when the first data was on screen
    error: '',
  };

  var el = {};

  function knownUnit(text) {
    return text === 'GiB' || text === 'MiB' ? text : '';
  }

  function positiveInt(text, fallback) {
    var n = parseInt(text, 10);
    return n > 0 ? n : fallback;
  }

  function esc(value) {
    return String(value).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c];
    });
  }

  // Memory amounts: integers as they are, fractions with at most two decimals (fewer when large).
  function fmt(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '?';
    return Number.isInteger(n) ? String(n) : String(parseFloat(n.toFixed(n >= 100 ? 0 : n >= 10 ? 1 : 2)));
  }

  // An amount of GPU memory with its unit.
  function mem(n) {
    return fmt(n) + '\u00a0' + state.unit;
  }

  function pct(part, whole) {
    return whole > 0 ? (100 * part / whole) : 0;
  }

  function hash(text) {
    var h = 2166136261;
    for (var i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 16777619);
    }
    return h >>> 0;
  }

  // One hue per namespace, the lightness varies with the pod: neighbours stay distinguishable.
  function podColor(namespace, name) {
    var hue = hash(namespace) % 360;
    var light = 42 + hash(name) % 22;
    return 'hsl(' + hue + ' 55% ' + light + '%)';
  }

  // The namespace's colour in the legend: its hue at the middle lightness of its pods.
  function namespaceColor(namespace) {
    return 'hsl(' + (hash(namespace) % 360) + ' 55% 52%)';
  }

  // assumed: bound by the extender, not yet seen bound; pending: bound (the API server says
  // so) but not running yet, e.g. the image is being pulled; running: everything else, also
  // when the extender does not report phases.
  function podState(pod) {
    if (pod.assumed) return 'assumed';
    if (pod.phase === 'Pending') return 'pending';
    return 'running';
  }

  var STATE_TEXT = {
    assumed: 'assumed (bound by the extender, not yet seen bound)',
    pending: 'bound, not running yet (phase Pending)',
    running: 'running',
  };

  // A Dynamic Resource Allocation claim holding memory of a GPU (/inspect's devs[].draClaims),
  // as the page labels it: its namespace/name and the pod it is reserved for.
  function claimLabel(claim) {
    return 'DRA claim ' + claim.claim + ' (' + (claim.pod || 'no pod') + ')';
  }

  function claimNamespace(claim) {
    var slash = String(claim.claim).indexOf('/');
    return slash >= 0 ? claim.claim.slice(0, slash) : '';
  }

  var FRAG_TEXT = 'frag: fragmented GPU memory, idle memory that pods of the expected workload could not use ' +
                  '(too little free on any one GPU for them)';

  // ---- data ---------------------------------------------------------------------------------

  // The page's fallback when the extender does not report fragmentedGPU: free memory on healthy
  // GPUs whose free amount is below the typical (median) pod request, i.e. memory that a typical
  // pod could not use.
  function typicalRequest(nodes) {
    var sizes = [];
    nodes.forEach(function (node) {
      (node.devs || []).forEach(function (dev) {
        (dev.pods || []).forEach(function (pod) { sizes.push(pod.usedGPU); });
      });
    });
    if (!sizes.length) return 0;
    sizes.sort(function (a, b) { return a - b; });
    return sizes[Math.floor(sizes.length / 2)];
  }

  function guessUnit(nodes) {
    for (var i = 0; i < nodes.length; i++) {
      var devs = nodes[i].devs || [];
      for (var j = 0; j < devs.length; j++) {
        if (devs[j].totalGPU > 0) return devs[j].totalGPU > 100 ? 'MiB' : 'GiB';
      }
    }
    return 'GiB';
  }

  function prepare(data) {
    var nodes = data.nodes || [];
    state.unit = state.unitParam || guessUnit(nodes);
    var namespaces = {};
    var serverFrag = typeof data.fragmentedGPU === 'number';
    var typical = serverFrag ? 0 : typicalRequest(nodes);
    var totals = {gpuNodes: 0, cpuNodes: 0, gpus: 0, unhealthy: 0, cordoned: 0, misconfigured: 0,
                  frag: 0, largestFree: 0, draClaims: 0, draUsed: 0};
    var draClaims = {};  // claims by namespace/name: one claim may hold several GPUs
    nodes.forEach(function (node) {
      var devs = node.devs || [];
      var free = Math.max(0, (node.totalGPU || 0) - (node.usedGPU || 0));
      var unhealthy = 0;
      var fallbackFrag = 0;
      var words = [node.name, node.gpuModel || '', node.address || ''];
      devs.forEach(function (dev) {
        if (!dev.healthy) unhealthy++;
        var devFree = Math.max(0, dev.totalGPU - dev.usedGPU);
        if (dev.healthy && devFree > 0 && devFree < typical) fallbackFrag += devFree;
        (dev.pods || []).forEach(function (pod) {
          words.push(pod.namespace + '/' + pod.name);
          namespaces[pod.namespace] = true;
        });
        (dev.draClaims || []).forEach(function (claim) {
          words.push(claim.claim, claim.pod || '');
          namespaces[claimNamespace(claim)] = true;
          draClaims[claim.claim] = true;
          totals.draUsed += claim.usedGPU || 0;
        });
      });
      (node.unindexedPods || []).concat(node.invalidIndexPods || []).forEach(function (pod) {
        words.push(pod.namespace + '/' + pod.name);
        namespaces[pod.namespace] = true;
      });
      node._free = free;
      node._frag = serverFrag ? (node.fragmentedGPU || 0) : fallbackFrag;
      node._usedShare = pct(node.usedGPU || 0, node.totalGPU || 0);
      node._unhealthy = unhealthy;
      node._cpuOnly = devs.length === 0 && !node.misconfiguration;
      node._search = words.join(' ').toLowerCase();
      if (node._cpuOnly) {
        totals.cpuNodes++;
      } else {
        totals.gpuNodes++;
      }
      totals.gpus += devs.length;
      totals.unhealthy += unhealthy;
      if (node.unschedulable) totals.cordoned++;
      if (node.misconfiguration) totals.misconfigured++;
      totals.frag += node._frag;
      totals.largestFree = Math.max(totals.largestFree, node.largestFreeGPU || 0);
    });
    totals.draClaims = Object.keys(draClaims).length;
    data._totals = totals;
    data._namespaces = Object.keys(namespaces).sort();
    data._fragSource = serverFrag
      ? 'the extender\'s FGD measure (' + ((data.fragmentation || {}).workload || 'target workload') + ')'
      : 'free memory on GPUs with less free than the median request (' + fmt(typical) + ')';
    return data;
  }

  function fetchNow() {
    if (state.inFlight) return;
    state.inFlight = true;
    var started = performance.now();
    fetch(INSPECT_URL, {cache: 'no-store', headers: {'Accept': 'application/json'}})
      .then(function (response) {
        if (!response.ok) throw new Error('HTTP ' + response.status + ' from ' + INSPECT_URL);
        return response.text();
      })
      .then(function (text) {
        stats.fetches++;
        stats.error = '';
        var changed = text !== state.lastText;
        if (changed) {
          state.data = prepare(JSON.parse(text));
          state.lastText = text;
        }
        stats.lastFetchMs = performance.now() - started;
        if (changed) render();
        setStatus('updated ' + new Date().toLocaleTimeString() + ' \u00b7 fetch ' +
                  Math.round(stats.lastFetchMs) + ' ms \u00b7 draw ' + Math.round(stats.lastRenderMs) + ' ms', false);
      })
      .catch(function (error) {
        stats.error = String(error && error.message || error);
        setStatus('cannot refresh: ' + stats.error + (state.data ? ' (showing the last data)' : ''), true);
      })
      .then(function () {
        state.inFlight = false;
        document.body.setAttribute('data-fetches', String(stats.fetches));
      });
  }

  function schedule() {
    if (state.timer) clearInterval(state.timer);
    state.timer = 0;
    if (state.refreshSeconds > 0) {
      state.timer = setInterval(function () {
        if (!document.hidden) fetchNow();
      }, state.refreshSeconds * 1000);
    }
  }

  function setStatus(text, isError) {
    el.status.textContent = text;
    el.status.className = isError ? 'status error' : 'status';
  }

  // ---- drawing ------------------------------------------------------------------------------

  function card(out, id, label, value, sub, extraClass, title, meter) {
    out.push('<div class="card', extraClass ? ' ' + extraClass : '', '" id="', id, '"',
             title ? ' title="' + esc(title) + '"' : '', '><div class="label">', esc(label),
             '</div><div class="value">', esc(value), '</div>');
    if (sub) out.push('<div class="sub">', esc(sub), '</div>');
    if (meter !== undefined) {
      out.push('<div class="meter"><div style="width:', Math.min(100, meter).toFixed(1), '%"></div></div>');
    }
    out.push('</div>');
  }

  function renderSummary(data) {
    var t = data._totals;
    var total = data.totalGPU || 0;
    var used = data.usedGPU || 0;
    var free = Math.max(0, total - used);
    var out = [];
    card(out, 'sum-allocated', 'GPU memory used', mem(used) + ' of ' + mem(total),
         pct(used, total).toFixed(1) + '% allocated to pods' + (t.draClaims ? ' and DRA claims' : ''), '', '',
         pct(used, total));
    card(out, 'sum-free', 'GPU memory free', mem(free), 'largest free on one GPU: ' + mem(t.largestFree));
    card(out, 'sum-fragmented', 'Fragmented (frag)', mem(Math.round(t.frag * 100) / 100),
         pct(t.frag, free).toFixed(1) + '% of free memory', '',
         'Idle GPU memory that pods of the expected workload could not use, by ' + data._fragSource + '.');
    card(out, 'sum-nodes', 'GPU nodes', String(t.gpuNodes),
         [t.cordoned + ' cordoned', t.misconfigured + ' misconfigured', t.cpuNodes + ' CPU-only'].join(', '),
         t.misconfigured ? 'alert' : '');
    card(out, 'sum-gpus', 'GPUs', String(t.gpus), t.unhealthy + ' unhealthy', t.unhealthy ? 'alert' : '');
    card(out, 'sum-pods', 'Pods', String(data.pods || 0),
         (data.assumedPods || 0) + ' assumed, not yet bound', data.assumedPods ? 'alert' : '',
         'Assumed: bound by the extender, not yet seen bound by the API server.');
    if (t.draClaims) {
      card(out, 'sum-dra', 'DRA claims', String(t.draClaims), mem(t.draUsed) + ' of GPU memory held', '',
           'ResourceClaims (Dynamic Resource Allocation) holding memory of GPUs published in ResourceSlices; ' +
           'counted in the memory used.');
    }
    el.summary.innerHTML = out.join('');
    var policy = data.policy || {};
    el.policy.textContent = policy.name ? 'policy: ' + policy.name : '';
  }

  function podTitle(pod, gpuText) {
    return pod.namespace + '/' + pod.name + '\n' + mem(pod.usedGPU) + ' ' + gpuText + '\n' + STATE_TEXT[podState(pod)] +
           (pod.modelPin ? '\npinned to GPU models: ' + pod.modelPin +
                           (pod.allowedModels ? ' (' + pod.allowedModels.join(', ') + ')' : '') : '');
  }

  // Per GPU model: capacity, use, pods pinned to it and the learned workload's share pinned to
  // it. Shown when there is more than one model or any pod is pinned.
  function renderModels(data) {
    var models = data.gpuModels || [];
    var pinned = models.some(function (m) { return m.pinnedPods > 0 || m.learnedPinnedWeight > 0; });
    el.models.hidden = !(models.length > 1 || pinned);
    if (el.models.hidden) {
      el.models.innerHTML = '';
      return;
    }
    var out = ['<h2>GPU models</h2><table><thead><tr><th>model</th><th>nodes</th><th>GPUs</th>',
               '<th>memory used</th><th>pinned pods</th><th title="Share of the workload the policy learned ',
               'whose pods are pinned to models including this one.">learned pinned demand</th></tr></thead><tbody>'];
    models.forEach(function (m) {
      out.push('<tr data-model="', esc(m.model), '"><td>', esc(m.model || '(no label)'), '</td><td>', m.nodes,
               '</td><td>', m.gpus, '</td><td>', mem(m.usedGPU), ' of ', mem(m.totalGPU), ' (',
               pct(m.usedGPU, m.totalGPU).toFixed(1), '%)</td><td>', m.pinnedPods, '</td><td>',
               typeof m.learnedPinnedWeight === 'number' ? (m.learnedPinnedWeight * 100).toFixed(1) + '%' : '\u2013',
               '</td></tr>');
    });
    out.push('</tbody></table>');
    el.models.innerHTML = out.join('');
  }

  // Consolidation (live mode, --consolidate plan or evict): the plan's moves, the move in flight
  // and the GPU memory held for a moved pod's replacement. Hidden while consolidation is off.
  function renderConsolidation(data) {
    var c = data.consolidation;
    el.consolidation.hidden = !c;
    if (!c) {
      el.consolidation.innerHTML = '';
      return;
    }
    function place(p) { return p ? esc(p.node) + '/GPU' + esc(p.gpu) : '\u2013'; }
    var out = ['<h2>Consolidation <span class="muted">', esc(c.mode || ''),
               c.acting ? ', acting' : '', '</span></h2>'];
    var plan = c.plan;
    if (plan && plan.moves && plan.moves.length) {
      out.push('<p class="plan">Plan: move ', plan.moves.length, ' pod(s) to free ', esc(plan.gpusFreed),
               ' GPU(s)</p><table><thead><tr><th>pod</th><th>from</th><th>to</th><th>memory</th></tr></thead><tbody>');
      plan.moves.forEach(function (m) {
        out.push('<tr data-move="', esc(m.pod), '"><td>', esc(m.pod), '</td><td>', place(m.from), '</td><td>',
                 place(m.to), '</td><td>', mem(m.memory), '</td></tr>');
      });
      out.push('</tbody></table>');
    } else {
      out.push('<p class="plan muted">No plan: no GPU can be freed now.</p>');
    }
    if (c.inFlight) {
      out.push('<p class="in-flight">In flight: ', esc(c.inFlight.pod), ' (', esc(c.inFlight.phase), ')</p>');
    }
    var holds = c.holds || [];
    if (holds.length) {
      out.push('<table><thead><tr><th>held GPU</th><th>memory</th><th>for</th><th>replacing</th><th>until</th></tr></thead><tbody>');
      holds.forEach(function (h) {
        out.push('<tr data-hold="', esc(h.node), '/', esc(h.gpu), '"><td>', esc(h.node), '/GPU', esc(h.gpu), '</td><td>',
                 mem(h.memory), '</td><td>', esc(h.owner), '</td><td>', esc(h.replacing), '</td><td>',
                 esc(h.expiresAt), '</td></tr>');
      });
      out.push('</tbody></table>');
    }
    if (c.waiting) out.push('<p class="muted">Waiting: ', esc(c.waiting), '</p>');
    if (c.lastStop) out.push('<p class="muted">Last stop: ', esc(c.lastStop.reason), '</p>');
    if (c.error) out.push('<p class="muted">', esc(c.error), '</p>');
    el.consolidation.innerHTML = out.join('');
  }

  function tile(node, out) {
    var classes = 'tile';
    if (node.unschedulable) classes += ' cordoned';
    if (node.misconfiguration) classes += ' misconfigured';
    if (node._cpuOnly) classes += ' cpu';
    out.push('<div class="', classes, '" data-node="', esc(node.name), '" data-free="', node._free,
             '" data-frag="', node._frag, '"><div class="tile-head"><span class="node-name" title="',
             esc(node.name + (node.address ? ' (' + node.address + ')' : '')), '">', esc(node.name),
             '</span><span class="model">', esc(node.gpuModel || ''), '</span>');
    if (node.unschedulable) out.push('<span class="badge">cordoned</span>');
    if (node._unhealthy) out.push('<span class="badge bad">', node._unhealthy, ' unhealthy</span>');
    out.push('</div>');
    if (node._cpuOnly) {
      out.push('<div class="tile-stats">no GPUs</div></div>');
      return;
    }
    out.push('<div class="tile-stats">used <b>', mem(node.usedGPU), '</b> of ', mem(node.totalGPU),
             ' \u00b7 free <b>', mem(node._free), '</b> \u00b7 <abbr class="frag" title="', esc(FRAG_TEXT), '">frag</abbr> <b>',
             mem(Math.round(node._frag * 100) / 100), '</b></div>');
    var devs = node.devs || [];
    var draHeld = [];  // {claim, gpu}: listed under the bars
    for (var i = 0; i < devs.length; i++) {
      var dev = devs[i];
      var total = dev.totalGPU || 0;
      var devFree = total - dev.usedGPU;
      var gpuClass = 'gpu' + (dev.healthy ? '' : ' unhealthy') + (devFree < 0 ? ' over' : '');
      out.push('<div class="', gpuClass, '" data-gpu="', dev.id, '" data-total="', total, '" data-used="',
               dev.usedGPU, dev.draDevice ? '" data-dra-device="' + esc(dev.draDevice) : '', '" title="GPU ', dev.id,
               dev.draDevice ? esc(' (DRA device ' + dev.draDevice + ')') : '', ': ', mem(dev.usedGPU), ' of ', mem(total), ' used',
               dev.healthy ? '' : ', UNHEALTHY (takes no new pods)', '"><span class="gpu-id">', dev.id,
               '</span><div class="bar">');
      var podsUsed = 0;
      var pods = dev.pods || [];
      for (var j = 0; j < pods.length; j++) {
        var pod = pods[j];
        podsUsed += pod.usedGPU;
        var podClass = podState(pod);
        // Not running yet: the pod's colour as an outline and stripes (currentColor), not filled.
        out.push('<div class="seg ', podClass, '" style="width:', pct(pod.usedGPU, total).toFixed(3), '%;',
                 podClass === 'pending' ? 'color:' : 'background-color:', podColor(pod.namespace, pod.name),
                 '" data-pod="', esc(pod.namespace + '/' + pod.name), '" data-amount="', pod.usedGPU,
                 '" data-assumed="', pod.assumed ? 'true' : 'false', '" data-state="', podClass,
                 pod.modelPin ? '" data-pin="' + esc(pod.modelPin) : '', '" title="',
                 esc(podTitle(pod, 'on GPU ' + dev.id)), '"></div>');
      }
      var claims = dev.draClaims || [];
      for (var c = 0; c < claims.length; c++) {
        var claim = claims[c];
        podsUsed += claim.usedGPU;
        // Beside the device-plugin pods, dotted so that they are told apart at a glance.
        out.push('<div class="seg dra" style="width:', pct(claim.usedGPU, total).toFixed(3), '%;background-color:',
                 podColor(claimNamespace(claim), claim.claim), '" data-claim="', esc(claim.claim), '" data-claim-pod="',
                 esc(claim.pod || ''), '" data-amount="', claim.usedGPU, '" title="',
                 esc(claimLabel(claim) + '\n' + mem(claim.usedGPU) + ' on GPU ' + dev.id +
                     (dev.draDevice ? ' (device ' + dev.draDevice + ')' : '')), '"></div>');
        draHeld.push({claim: claim, gpu: dev.id});
      }
      if (dev.usedGPU > podsUsed) {
        // Allocated on the GPU but by no pod the model lists on it.
        out.push('<div class="seg other" style="width:', pct(dev.usedGPU - podsUsed, total).toFixed(3),
                 '%" data-amount="', dev.usedGPU - podsUsed, '" title="', mem(dev.usedGPU - podsUsed),
                 ' used by pods not listed on this GPU"></div>');
      }
      out.push('</div><span class="gpu-free" title="free on GPU ', dev.id, '">', mem(Math.max(0, devFree)),
               ' free</span></div>');
    }
    if (draHeld.length) {
      out.push('<div class="note dra-claims" title="ResourceClaims (Dynamic Resource Allocation) holding memory of this node\'s GPUs.">');
      for (var d = 0; d < draHeld.length; d++) {
        var held = draHeld[d];
        out.push('<span class="dra-claim" data-claim="', esc(held.claim.claim), '" data-gpu="', held.gpu,
                 '">', esc(claimLabel(held.claim)), ' on GPU\u00a0', held.gpu, ': ', mem(held.claim.usedGPU), '</span>');
      }
      out.push('</div>');
    }
    var unindexed = node.unindexedPods || [];
    if (unindexed.length) {
      out.push('<div class="note" title="Pods bound without a GPU index: they count against the node, not a GPU.">',
               'no GPU index: ');
      for (var k = 0; k < unindexed.length; k++) {
        var p = unindexed[k];
        out.push(k ? ', ' : '', '<span class="unindexed ', podState(p), '" data-pod="', esc(p.namespace + '/' + p.name),
                 '" title="', esc(podTitle(p, 'on no GPU index')), '">', esc(p.namespace + '/' + p.name), ' (',
                 mem(p.usedGPU), ')</span>');
      }
      out.push('</div>');
    }
    var invalid = node.invalidIndexPods || [];
    if (invalid.length) {
      out.push('<div class="note bad" title="Pods whose GPU index annotation names a GPU this node does not have: they count against the node.">',
               'invalid GPU index: ');
      for (var m = 0; m < invalid.length; m++) {
        var q = invalid[m];
        out.push(m ? ', ' : '', '<span class="invalid-index" data-pod="', esc(q.namespace + '/' + q.name),
                 '" title="', esc(podTitle(q, 'on GPU index ' + q.gpuIndex + ', which this node does not have')), '">',
                 esc(q.namespace + '/' + q.name), ' (index ', esc(String(q.gpuIndex)), ', ', mem(q.usedGPU), ')</span>');
      }
      out.push('</div>');
    }
    if (node.misconfiguration) out.push('<div class="note bad">', esc(node.misconfiguration), '</div>');
    out.push('</div>');
  }

  var sorters = {
    'name': function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; },
    'free-desc': function (a, b) { return b._free - a._free; },
    'free-asc': function (a, b) { return a._free - b._free; },
    'frag-desc': function (a, b) { return b._frag - a._frag; },
    'used-desc': function (a, b) { return b._usedShare - a._usedShare; },
  };

  function visibleNodes(data) {
    var needle = state.filter.trim().toLowerCase();
    var list = (data.nodes || []).filter(function (node) {
      if (node._cpuOnly && !state.showCpu) return false;
      return !needle || node._search.indexOf(needle) >= 0;
    });
    var primary = sorters[state.sort] || sorters.name;
    list.sort(function (a, b) { return primary(a, b) || sorters.name(a, b); });
    return list;
  }

  function renderNodes(data) {
    var list = visibleNodes(data);
    var drawn = Math.min(list.length, state.limit);
    var out = [];
    for (var i = 0; i < drawn; i++) tile(list[i], out);
    el.nodes.innerHTML = out.join('');
    var all = (data.nodes || []).length;
    el.shown.textContent = list.length === all ? all + ' nodes' : list.length + ' of ' + all + ' nodes';
    el.more.innerHTML = drawn < list.length
      ? 'Showing ' + drawn + ' of ' + list.length + ' nodes. <button type="button" id="show-all">Show all</button>'
      : '';
  }

  function reasonGroup(reason) {
    return String(reason).replace(/\d+(\.\d+)?/g, '#');
  }

  function renderRejections(data) {
    var needle = state.filter.trim().toLowerCase();
    var all = data.recentRejections || [];
    var list = needle ? all.filter(function (r) {
      return (r.pod + ' ' + r.node + ' ' + r.reason).toLowerCase().indexOf(needle) >= 0;
    }) : all;
    var groups = {};
    list.forEach(function (r) {
      var g = reasonGroup(r.reason);
      groups[g] = (groups[g] || 0) + 1;
    });
    var chips = Object.keys(groups).sort(function (a, b) { return groups[b] - groups[a]; }).slice(0, 8);
    el.reasons.innerHTML = chips.map(function (g) {
      return '<span class="reason-chip">' + groups[g] + ' \u00d7 ' + esc(g) + '</span>';
    }).join('');
    var out = [];
    var rows = Math.min(list.length, MAX_REJECTION_ROWS);
    for (var i = 0; i < rows; i++) {
      var r = list[i];
      var when = new Date(Number(r.timeUnixNano) / 1e6);
      out.push('<tr class="rejection"><td title="', esc(when.toISOString()), '">', esc(when.toLocaleTimeString()),
               '</td><td>', esc(r.pod), '</td><td>', esc(r.node), '</td><td>', esc(r.reason), '</td></tr>');
    }
    if (!rows) out.push('<tr><td colspan="4" class="muted">none', needle ? ' matching the filter' : '', '</td></tr>');
    el.tbody.innerHTML = out.join('');
    el.rejectionCount.textContent = list.length === all.length
      ? '(' + all.length + ', newest first)' : '(' + list.length + ' of ' + all.length + ', newest first)';
  }

  var MAX_LEGEND_NAMESPACES = 40;

  function renderNamespaces(data) {
    var names = data._namespaces;
    var out = names.length ? ['<span class="muted">Namespaces (pod colours):</span>'] : [];
    for (var i = 0; i < names.length && i < MAX_LEGEND_NAMESPACES; i++) {
      out.push('<span class="ns" data-namespace="', esc(names[i]), '"><span class="swatch" style="background-color:',
               namespaceColor(names[i]), '"></span>', esc(names[i]), '</span>');
    }
    if (names.length > MAX_LEGEND_NAMESPACES) {
      out.push('<span class="muted">and ', names.length - MAX_LEGEND_NAMESPACES, ' more</span>');
    }
    el.namespaces.innerHTML = out.join('');
  }

  // Mistakes the extender found in what it reads (a misspelt key in an unhealthy-gpu ConfigMap):
  // said at the top, since they change what the cluster does.
  function renderWarnings(data) {
    var warnings = data.configWarnings || [];
    el.warnings.innerHTML = warnings.map(function (w) {
      return '<div class="warning" data-object="' + esc(w.object) + '" data-key="' + esc(w.key) + '">' +
             esc(w.message) + '</div>';
    }).join('');
    el.warnings.hidden = warnings.length === 0;
  }

  function render() {
    var data = state.data;
    if (!data) return;
    var started = performance.now();
    renderWarnings(data);
    renderSummary(data);
    renderModels(data);
    renderConsolidation(data);
    renderNamespaces(data);
    renderNodes(data);
    renderRejections(data);
    stats.lastRenderMs = performance.now() - started;
    stats.renders++;
    if (!stats.firstRenderAt) stats.firstRenderAt = performance.now();
    document.body.setAttribute('data-renders', String(stats.renders));
    document.body.setAttribute('data-render-ms', stats.lastRenderMs.toFixed(1));
  }

  // ---- controls -----------------------------------------------------------------------------

  function syncUrl() {
    var q = new URLSearchParams(window.location.search);
    function put(key, value, dflt) {
      if (value === dflt) q.delete(key); else q.set(key, value);
    }
    put('filter', state.filter, '');
    put('sort', state.sort, 'name');
    put('cpu', state.showCpu ? '1' : '0', '0');
    put('refresh', String(state.refreshSeconds), '5');
    var search = q.toString();
    window.history.replaceState(null, '', search ? '?' + search : window.location.pathname);
  }

  function init() {
    ['summary', 'models', 'consolidation', 'nodes', 'more', 'shown', 'status', 'policy', 'reasons', 'namespaces', 'warnings'].forEach(function (id) {
      el[id] = document.getElementById(id);
    });
    el.tbody = document.getElementById('rejections');
    el.rejectionCount = document.getElementById('rejection-count');
    var filter = document.getElementById('filter');
    var sort = document.getElementById('sort');
    var showCpu = document.getElementById('show-cpu');
    var refresh = document.getElementById('refresh');

    filter.value = state.filter;
    if (sorters[state.sort]) sort.value = state.sort; else state.sort = 'name';
    showCpu.checked = state.showCpu;
    var refreshText = String(state.refreshSeconds);
    if (!Array.prototype.some.call(refresh.options, function (o) { return o.value === refreshText; })) {
      var option = document.createElement('option');
      option.value = refreshText;
      option.textContent = refreshText + ' s';
      refresh.appendChild(option);
    }
    refresh.value = refreshText;

    var debounce = 0;
    filter.addEventListener('input', function () {
      clearTimeout(debounce);
      debounce = setTimeout(function () {
        state.filter = filter.value;
        syncUrl();
        render();
      }, 120);
    });
    sort.addEventListener('change', function () { state.sort = sort.value; syncUrl(); render(); });
    showCpu.addEventListener('change', function () { state.showCpu = showCpu.checked; syncUrl(); render(); });
    refresh.addEventListener('change', function () {
      state.refreshSeconds = Number(refresh.value) || 0;
      syncUrl();
      schedule();
      if (state.refreshSeconds > 0) fetchNow();
    });
    el.more.addEventListener('click', function (event) {
      if (event.target && event.target.id === 'show-all') {
        state.limit = Infinity;
        render();
      }
    });
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden && state.refreshSeconds > 0) fetchNow();
    });

    fetchNow();
    schedule();
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', init);
  } else {
    init();
  }
})();
