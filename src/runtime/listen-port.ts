/**
 * The port to listen on for a container port. In a cluster every pod has its own
 * network namespace, so it is the container port itself; on the local cluster all
 * pods share the host's loopback, and the local node agent hands each pod its own
 * port through SWITCHYARD_HOST_PORT_<containerPort>. A process started by hand beside others (a
 * test's worker) sets it to 0: any free port, as the process's log says.
 */
export function listenPort(containerPort: number, env: NodeJS.ProcessEnv = process.env): number {
  const override = env[`SWITCHYARD_HOST_PORT_${containerPort}`];
  if (override === undefined) return containerPort;
  const port = Number(override);
  if (override.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`SWITCHYARD_HOST_PORT_${containerPort}=${override} is not a TCP port`);
  }
  return port;
}
