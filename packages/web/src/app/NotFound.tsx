import { Link } from 'react-router';
import { useTitle } from '../lib/title';

export function NotFoundPage() {
  useTitle('Page not found');
  return (
    <section className="page stack">
      <h1>Page not found</h1>
      <p>
        There is nothing at this address. <Link to="/projects">Go to your projects</Link>
      </p>
    </section>
  );
}
