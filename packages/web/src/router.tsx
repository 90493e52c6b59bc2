import { createBrowserRouter, Navigate } from 'react-router';
import { AppShell, RequireSession } from './pages/Shell';
import { SignInPage } from './pages/SignIn';
import { SignUpPage } from './pages/SignUp';
import { InvitePage } from './pages/Invite';
import { InvitationsPage } from './pages/Invitations';
import { ProjectsPage } from './pages/Projects';
import { ProjectLayout } from './pages/ProjectLayout';
import { EnvironmentsPage } from './pages/Environments';
import { SecretsPage } from './secrets/SecretsPage';
import { SettingsPage } from './pages/Settings';
import { NotFoundPage } from './pages/NotFound';

export const router = createBrowserRouter([
  { path: '/signin', element: <SignInPage /> },
  { path: '/signup', element: <SignUpPage /> },
  { path: '/invite', element: <InvitePage /> },
  {
    element: <RequireSession />,
    children: [
      {
        element: <AppShell />,
        children: [
          { index: true, element: <Navigate to="/projects" replace /> },
          { path: '/projects', element: <ProjectsPage /> },
          { path: '/invitations', element: <InvitationsPage /> },
          { path: '/settings', element: <SettingsPage /> },
          {
            path: '/projects/:projectId',
            element: <ProjectLayout />,
            children: [
              { index: true, element: <SecretsPage /> },
              { path: 'environments', element: <EnvironmentsPage /> },
            ],
          },
          { path: '*', element: <NotFoundPage /> },
        ],
      },
    ],
  },
]);
