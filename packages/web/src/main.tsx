import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router';
import { auth } from './lib/auth';
import { startAutolock } from './lib/autolock';
import { toProblem } from './lib/errors';
import { captureIntroduction } from './lib/introduction';
import { keyring } from './lib/keyring';
import { router } from './router';
import { startTheme } from './lib/theme';
import './styles.css';
import { allSecretsKey, allVersionsKey } from './lib/queries';

// A 401 from any request means the session ended (expired, signed out
// elsewhere, password changed): back to sign-in, keeping the current URL.
const onError = (error: unknown) => {
  if (toProblem(error).signedOut) auth.expired();
};

const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    queries: {
      // Each request spends the session's rate-limit budget (100 a minute):
      // refetch on navigation and after writes, not on every focus.
      refetchOnWindowFocus: false,
      staleTime: 5_000,
      retry: (count, error) => toProblem(error).network && count < 2,
    },
  },
});

startTheme();
captureIntroduction();
// Locking forgets every decrypted value: the secret listings (metadata that says
// a value is readable) go with them, so the grid loads and decrypts again on unlock.
keyring.onLock(() => {
  queryClient.removeQueries({ queryKey: allSecretsKey() });
  queryClient.removeQueries({ queryKey: allVersionsKey() });
});
startAutolock();
void auth.load();

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
