// Node-RED settings of wotbench/gw-nodered (docker/gw-nodered.Dockerfile):
// the HTTP-to-CoAP flow of flow.json, no editor, no admin API, nothing
// written outside /tmp (the container's root filesystem is read-only).
module.exports = {
    uiPort: 1880,
    userDir: "/tmp/node-red",
    flowFile: "/opt/wotbench-nodered/flow.json",
    credentialSecret: false,
    httpAdminRoot: false,
    httpNodeRoot: "/",
    disableEditor: true,
    functionExternalModules: false,
    externalModules: {
        autoInstall: false,
        palette: { allowInstall: false, allowUpload: false },
        modules: { allowInstall: false },
    },
    diagnostics: { enabled: false, ui: false },
    runtimeState: { enabled: false, ui: false },
    telemetry: { enabled: false },
    editorTheme: { projects: { enabled: false } },
    logging: { console: { level: "warn", metrics: false, audit: false } },
};
