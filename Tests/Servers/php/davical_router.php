<?php
// Router for `php -S 127.0.0.1:PORT -t /usr/share/davical/htdocs davical_router.php`, started by
// dav_servers.py --server davical. It serves DAViCal the way Apache with DocumentRoot
// /usr/share/davical/htdocs (and AcceptPathInfo, DirectoryIndex index.php) would:
//
//   /caldav.php/...       DAViCal's DAV endpoint, PATH_INFO = the decoded rest of the path
//   /.well-known/...      handed to caldav.php as PATH_INFO /.well-known/... (DAViCal's Apache
//                         config rewrites it so), where DAViCal answers caldav and carddav with
//                         301 Location: http://host:port/caldav.php/
//   / and other .php      that script (index.php hands every method but GET, POST and HEAD to
//                         caldav.php, so a PROPFIND of / is DAViCal's root)
//   static files          the built-in server's own handling (the admin UI's CSS and images)
//   anything else         404
//
// DAViCal reads its configuration from /etc/davical/<SERVER_NAME>-conf.php, falling back to
// /etc/davical/config.php. To use a configuration in the server's temporary directory without
// writing to /etc, SERVER_NAME is set to a relative path that leads from /etc/davical to
// $FERRY_DAVICAL_CONFIG (minus "-conf.php"); that file sets SERVER_NAME back to 127.0.0.1.

$htdocs = '/usr/share/davical/htdocs';
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
$info = null;
if (preg_match('{^/caldav\.php(/.*)?$}', $path, $m)) {
    $script = '/caldav.php';
    $info = isset($m[1]) ? $m[1] : null;
} elseif (preg_match('{^/\.well-known/}', $path)) {
    $script = '/caldav.php';
    $info = $path;
} elseif ($path === '/') {
    $script = '/index.php';
} else {
    $file = realpath($htdocs . rawurldecode($path));
    if ($file === false || strpos($file, $htdocs . '/') !== 0 || !is_file($file)) {
        http_response_code(404);
        header('Content-Type: text/plain; charset=utf-8');
        echo "Not Found\n";
        return true;
    }
    if (substr($file, -4) !== '.php') {
        return false;
    }
    $script = substr($file, strlen($htdocs));
}

$config = getenv('FERRY_DAVICAL_CONFIG');
$_SERVER['SERVER_NAME'] = '../..' . substr($config, 0, -strlen('-conf.php'));
$_SERVER['SCRIPT_NAME'] = $script;
$_SERVER['SCRIPT_FILENAME'] = $htdocs . $script;
$_SERVER['PHP_SELF'] = $script . ($info === null ? '' : $info);
if ($info === null) {
    unset($_SERVER['PATH_INFO']);
} else {
    // Apache and nginx hand PHP a decoded PATH_INFO.
    $_SERVER['PATH_INFO'] = rawurldecode($info);
}
chdir($htdocs);
require $htdocs . $script;
