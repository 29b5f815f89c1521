// Starts @firestore-emulator/server on 127.0.0.1 at a free port (the
// package's own start() binds 0.0.0.0) and prints `127.0.0.1:<port>` on
// stdout once it listens. Runs until killed.
import { ServerCredentials } from '@grpc/grpc-js';
import { FirestoreServer } from '@firestore-emulator/server';

const server = new FirestoreServer();
// `server` is the package's gRPC Server with the Firestore service added.
server.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, port) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  console.log(`127.0.0.1:${port}`);
});
process.on('SIGTERM', () => {
  server.stop();
  process.exit(0);
});
