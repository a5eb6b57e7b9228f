# hlo-layout HTTP server.
#   docker build -t hlo-layout . && docker run --rm -p 8000:8000 hlo-layout
# Settings come from HLO_LAYOUT_* variables (workers, queue_limit, auth_token, cache_path...).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HLO_LAYOUT_CACHE_PATH=/data/results.sqlite

WORKDIR /app

# Dependencies first, in their own layer: editing the code does not reinstall them.
# The project's dependency list is read from pyproject.toml without the code.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml','rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# Then the code.
COPY README.md ./
COPY hlo ./hlo
COPY solver ./solver
COPY service ./service
RUN pip install --no-deps .
# Import the installed package from outside the source tree: a package directory missing from
# the install (no __init__.py) fails the build here rather than the first request.
RUN cd / && python -c "import service.app, service.layout_operations, service.cli"
# The dual bound's compiled sweeps (numba), compiled once here into a cache every user reads.
ENV NUMBA_CACHE_DIR=/var/cache/numba
RUN cd / && python -c "import solver.trws; solver.trws.warm()" && chmod -R a+rwX /var/cache/numba

RUN useradd --create-home --uid 10001 hlo \
    && mkdir -p /data && chown hlo:hlo /data
USER hlo
VOLUME ["/data"]

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request, sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"]

CMD ["hlo-layout", "serve", "--host", "0.0.0.0", "--port", "8000"]
