// A stub of kube-apiserver for `helm template --dry-run=server`: enough discovery for
// Helm to render against "a cluster", and the kube-system Namespace, which every API
// server has and the chart looks up to tell an install from a look-only render
// (templates/_helpers.tpl, gpu-admission.image). Everything else is 404. Plain HTTP on
// loopback; prints its port, serves until killed. Usage: node test/helm/fake-api.js
'use strict';
const http = require('http');

const routes = {
	'/version': { major: '1', minor: '34', gitVersion: 'v1.34.4' },
	'/api': { kind: 'APIVersions', versions: ['v1'],
		serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] },
	'/apis': { kind: 'APIGroupList', apiVersion: 'v1', groups: [] },
	'/api/v1': { kind: 'APIResourceList', groupVersion: 'v1', resources: [
		{ name: 'namespaces', singularName: 'namespace', namespaced: false, kind: 'Namespace', verbs: ['get', 'list'] }] },
	'/api/v1/namespaces/kube-system': { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } },
};

const server = http.createServer((req, res) => {
	const found = routes[req.url.split('?')[0]];
	const body = JSON.stringify(found ||
		{ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
	res.writeHead(found ? 200 : 404, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
	res.end(body);
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
