/**
 * The container HEALTHCHECK (`node dist/src/healthcheck.js [path]`): exits 0 when this container's
 * process answers 200 on its probe, 1 otherwise. The API roles answer on PORT; a worker
 * (APP_ROLE=worker) on WORKER_HTTP_PORT. Default path /api/health (liveness); compose passes /api/ready.
 */
const role = process.env.APP_ROLE ?? 'all';
const port = role === 'worker' ? (process.env.WORKER_HTTP_PORT ?? '3001') : (process.env.PORT ?? '3000');
const path = process.argv[2] ?? '/api/health';

fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(4000) })
  .then((res) => process.exit(res.status === 200 ? 0 : 1))
  .catch(() => process.exit(1));
