# Sourced by scripts/dev.sh and scripts/test.sh after scripts/setup.sh: puts the project's own
# Node.js (the `node` npm package, a devDependency: node_modules/.bin/node) and its tools first on
# PATH, so tsc, eslint, vitest, tsx and every child process they start (process.execPath) run on
# it, whatever the system's Node.js is.
project_bin="$(pwd)/node_modules/.bin"
if [ ! -x "$project_bin/node" ]; then
  echo "The project's Node.js is missing (node_modules/.bin/node): run bash scripts/setup.sh --ci" >&2
  exit 1
fi
export PATH="$project_bin:$PATH"
hash -r
