// Preloaded with `node --require ./loopback.cjs`: the gateway's start script
// has no host option and would listen on every interface; the load
// comparison must listen on 127.0.0.1 only.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  } else if (args[0] && typeof args[0] === "object" && args[0].host === undefined && args[0].port !== undefined) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
