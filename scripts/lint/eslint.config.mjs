// ESLint configuration (flat config), run by `npm run lint` and by `npm test` through
// test/unit/tidy.test.mjs. A small rule set that the tree passes: it keeps out what review keeps
// finding (unused code, floating promises, non-null assertions creeping in) without restyling code.
import tseslint from 'typescript-eslint';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'src/api/web/assets/**', 'src/api/docs/client/**', 'src/api/docs/ui/**'] },
  {
    files: ['src/**/*.ts'],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: root } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none', caughtErrors: 'none', ignoreRestSiblings: true }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-var': 'error',
      'prefer-const': 'error',
      eqeqeq: ['error', 'always'],
      'no-debugger': 'error',
      'no-eval': 'error',
    },
  },
);
