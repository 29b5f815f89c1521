// What the interop and layout scripts share: Genkit JS's Firestore session
// store on the emulator (FIRESTORE_EMULATOR_HOST, project GCLOUD_PROJECT).
import { initializeApp } from 'firebase-admin/app';
import { getFirestore } from 'firebase-admin/firestore';
import { FirestoreSessionStore } from '@genkit-ai/firebase/beta';

if (!process.env.FIRESTORE_EMULATOR_HOST) {
  throw new Error('FIRESTORE_EMULATOR_HOST is not set');
}
const app = initializeApp({ projectId: process.env.GCLOUD_PROJECT ?? 'demo-genkit' });
export const db = getFirestore(app);

export function store(opts = {}) {
  return new FirestoreSessionStore({ db, ...opts });
}
