// Deletes one document (a test's way to corrupt a stored session).
//
//   node delete_doc.mjs <document path>
import { db } from './common.mjs';

await db.doc(process.argv[2]).delete();
process.exit(0);
